// Logs for machines: server.log_format = "json" writes each record as one
// JSON object on one line, with fixed keys in a fixed order:
//   {"ts":"2026-11-30T15:39:29.123Z","level":"info","msg":"...","thread":1234}
// then any fields of the record (the "parley ready" line adds "http" and "tcp").
// ts is UTC with milliseconds; level is named as server.log_level names it
// (trace, debug, info, warn, error, critical). Bytes of msg that are not valid
// UTF-8 become U+FFFD, so every line parses whatever a log message quoted.
//
// JsonLogFormatter runs on whichever thread logs (spdlog calls it under the
// sink's lock); it holds no state.
#pragma once

#include <spdlog/formatter.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parley::server {

// One numeric field after the fixed keys.
using LogField = std::pair<std::string_view, int64_t>;

// The line for one record, with its trailing newline.
std::string json_log_line(std::chrono::system_clock::time_point ts, std::string_view level,
                          std::string_view msg, uint64_t thread,
                          const std::vector<LogField>& fields = {});

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

// Applies server.log_format ("text" or "json") to spdlog's default logger.
void apply_log_format(std::string_view format);

}  // namespace parley::server
