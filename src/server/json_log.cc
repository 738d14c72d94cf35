#include "server/json_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>

#include "common/json_writer.h"

namespace parley::server {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return k < left && (b(k) & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace

std::string json_log_line(std::chrono::system_clock::time_point ts, std::string_view level,
                          std::string_view msg, uint64_t thread,
                          const std::vector<LogField>& fields) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(ts.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[32];
  const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out;
  out.reserve(96 + msg.size());
  JsonWriter w(out);
  w.begin_object()
      .field("ts", fmt::format("{}.{:03}Z", std::string_view(stamp, n), ms % 1000))
      .field("level", level)
      .field("msg", valid_utf8(msg))
      .field_unum("thread", thread);
  for (const auto& [k, v] : fields) w.field_num(k, v);
  w.end_object();
  out += '\n';
  return out;
}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  // The names server.log_level takes (spdlog's own says "warning").
  static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn",
                                                 "error", "critical", "off"};
  const auto i = static_cast<size_t>(msg.level);
  const std::string line =
      json_log_line(msg.time, i < std::size(kLevels) ? kLevels[i] : "unknown",
                    std::string_view(msg.payload.data(), msg.payload.size()), msg.thread_id);
  dest.append(line.data(), line.data() + line.size());
}

void apply_log_format(std::string_view format) {
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l %v");
  }
}

}  // namespace parley::server
