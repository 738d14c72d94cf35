#include <gtest/gtest.h>
#include <parley/codec.h>

#include <string>

namespace parley {
namespace {

TEST(JsonCodec, DecodesAnObjectOrAnArrayOfObjects) {
  std::vector<Json> out;
  ASSERT_TRUE(json_codec()->decode(R"({"op":"pong","rid":1})", out));
  ASSERT_TRUE(json_codec()->decode(R"([{"op":"msg","seq":1},{"op":"msg","seq":2}])", out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2]["seq"], 2);
}

TEST(JsonCodec, RefusesWhatIsNotAServerFrame) {
  std::vector<Json> out;
  for (const char* bad : {"", "nul", "{\"op\":", "1", "\"s\"", "[1]", "[{},2]", "{\"a\":1}x", "\xff\xfe"}) {
    EXPECT_FALSE(json_codec()->decode(bad, out)) << bad;
  }
  EXPECT_TRUE(out.empty());
  std::string open(100000, '[');
  EXPECT_FALSE(json_codec()->decode(open, out));
  // Complete and deep: parsed and freed without recursion, then refused.
  EXPECT_FALSE(json_codec()->decode(std::string(200000, '[') + std::string(200000, ']'), out));
}

TEST(JsonCodec, EncodesInvalidUtf8WithoutThrowing) {
  std::string out;
  ASSERT_TRUE(json_codec()->encode({{"op", "pub"}, {"body", std::string("a\xff")}}, out));
  EXPECT_NE(out.find("\"op\":\"pub\""), std::string::npos);
}

}  // namespace
}  // namespace parley
