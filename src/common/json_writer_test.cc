#include "common/json_writer.h"

#include <gtest/gtest.h>

namespace parley {
namespace {

TEST(JsonWriter, WritesNestedObjectsWithCommas) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().field("op", "ack").field_num("seq", 7).field_bool("dup", false);
  w.key("a").begin_array().num(1).num(-2).end_array();
  w.field_raw("body", R"({"x":1})").end_object();
  EXPECT_EQ(out, R"({"op":"ack","seq":7,"dup":false,"a":[1,-2],"body":{"x":1}})");
}

TEST(JsonWriter, EscapesControlQuotesAndBackslashes) {
  std::string out;
  append_json_string(out, std::string_view("a\"b\\c\n\x01\x1f", 8));
  EXPECT_EQ(out, R"("a\"b\\c\n\u0001\u001f")");
}

TEST(JsonWriter, PassesUtf8Through) {
  std::string out;
  append_json_string(out, "h\xc3\xa9llo");
  EXPECT_EQ(out, "\"h\xc3\xa9llo\"");
}

}  // namespace
}  // namespace parley
