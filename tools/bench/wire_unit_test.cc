// The bench's MessagePack wire and its state-delta audit (msgpack_wire.h,
// delta_audit.h), written from PROTOCOL.md alone: a frame packed and unpacked
// reads the same; deltas rebuild bodies by the page's rule, and the audit
// refuses a delta without a base or one that rebuilds another sender's body.
#include <gtest/gtest.h>

#include <string>

#include "delta_audit.h"
#include "msgpack_wire.h"

namespace bench {
namespace {

TEST(MsgpackWire, AFramePackedAndUnpackedReadsTheSame) {
  const std::string json =
      R"({"op":"state","ch":"world:1","key":"pos","pos":[1.5,-2],"body":{"t":1764460800123,"x":-5,"s":"a\"b","n":null,"ok":true,"l":[1,2,3]}})";
  std::string mp, back;
  ASSERT_TRUE(mpk::pack_json(json, mp));
  EXPECT_EQ(uint8_t(mp[0]), 0x85);  // a map of 5
  ASSERT_TRUE(mpk::unpack_to_json(mp.data(), mp.size(), back));
  EXPECT_EQ(back, json);
  EXPECT_FALSE(mpk::unpack_to_json(mp.data(), mp.size() - 1, back));  // truncated
  const std::string bin("\xc4\x03\x00\x01\xff", 5);
  back.clear();
  ASSERT_TRUE(mpk::unpack_to_json(bin.data(), bin.size(), back));
  EXPECT_EQ(back, R"({"$bin":"AAH/"})");
}

TEST(DeltaAudit, RebuildsBodiesAndRefusesWhatCannotBeRight) {
  DeltaStreams s;
  int64_t t = 0;
  EXPECT_FALSE(s.apply(7, R"({"x":1})", "", t)) << "no base";
  ASSERT_TRUE(s.full(7, "u42", R"({"t":10,"x":1,"y":42,"name":"ann"})"));
  ASSERT_TRUE(s.apply(7, R"({"t":11,"x":2})", "", t));
  EXPECT_EQ(t, 11);
  ASSERT_TRUE(s.apply(7, R"({"t":12})", R"(["name"])", t));
  EXPECT_EQ(t, 12);
  EXPECT_FALSE(s.apply(7, R"({"t":13,"y":43})", "", t)) << "y is not u42's: a wrong base";
  EXPECT_FALSE(s.apply(7, R"({"t":14})", R"(["x"])", t)) << "a bench body lost its x";
  EXPECT_FALSE(s.apply(7, "[1]", "", t)) << "not an object";
  s.clear();
  EXPECT_FALSE(s.apply(7, R"({"t":15})", "", t)) << "a new connection has no bases";
}

}  // namespace
}  // namespace bench
