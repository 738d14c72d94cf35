#include "server/json_log.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace parley::server {
namespace {

using Clock = std::chrono::system_clock;

// Parses one line as a JSON object; fails the test if it is not one.
simdjson::dom::object parse(simdjson::dom::parser& p, const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  simdjson::dom::object obj;
  EXPECT_EQ(p.parse(line).get(obj), simdjson::SUCCESS) << line;
  return obj;
}

TEST(JsonLog, FixedKeysInOrderWithUtcMilliseconds) {
  const Clock::time_point ts = Clock::from_time_t(1'796'000'000) + std::chrono::milliseconds(42);
  const std::string line = json_log_line(ts, "info", "hello", 7);
  EXPECT_EQ(line, "{\"ts\":\"2026-11-30T00:53:20.042Z\",\"level\":\"info\",\"msg\":\"hello\","
                  "\"thread\":7}\n");
}

TEST(JsonLog, FieldsFollowTheFixedKeys) {
  simdjson::dom::parser p;
  auto obj = parse(p, json_log_line(Clock::now(), "info", "parley ready http=80 tcp=0", 1,
                                    {{"http", 80}, {"tcp", 0}}));
  EXPECT_EQ(int64_t(obj["http"]), 80);
  EXPECT_EQ(int64_t(obj["tcp"]), 0);
}

TEST(JsonLog, QuotesControlCharactersAndNewlinesStayOnOneLine) {
  simdjson::dom::parser p;
  const std::string msg = "a \"quoted\" \\ back\nslash\r\t\x01 end";
  const std::string line = json_log_line(Clock::now(), "warn", msg, 1);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto obj = parse(p, line);
  EXPECT_EQ(std::string_view(obj["msg"]), msg);
}

TEST(JsonLog, InvalidUtf8BecomesReplacementCharacters) {
  simdjson::dom::parser p;
  // A lone continuation byte, an overlong '/', a surrogate, a truncated 4-byte sequence.
  const std::string msg = "x\x80y\xC0\xAFz\xED\xA0\x80w\xF0\x9F\x98";
  auto obj = parse(p, json_log_line(Clock::now(), "error", msg, 1));
  const std::string_view out = obj["msg"];
  EXPECT_EQ(out.substr(0, 1), "x");
  EXPECT_NE(out.find("\xEF\xBF\xBD"), std::string_view::npos);
  // Valid multi-byte text passes unchanged.
  auto ok = parse(p, json_log_line(Clock::now(), "info", "h\xC3\xA9llo \xF0\x9F\x98\x80", 1));
  EXPECT_EQ(std::string_view(ok["msg"]), "h\xC3\xA9llo \xF0\x9F\x98\x80");
}

TEST(JsonLog, SpdlogRecordsGoThroughTheFormatter) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("t", sink);
  logger.set_formatter(std::make_unique<JsonLogFormatter>());
  logger.warn("drain: {} requests", 3);
  simdjson::dom::parser p;
  auto obj = parse(p, out.str());
  EXPECT_EQ(std::string_view(obj["level"]), "warn");
  EXPECT_EQ(std::string_view(obj["msg"]), "drain: 3 requests");
  EXPECT_GT(uint64_t(obj["thread"]), 0u);
}

}  // namespace
}  // namespace parley::server
