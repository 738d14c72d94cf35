// The segment files' byte layout and its checksum.
#include <string>

#include <gtest/gtest.h>

#include "store/segment/crc32c.h"
#include "store/segment/segment_format.h"

namespace parley::store::segment {
namespace {

TEST(Crc32c, MatchesTheStandardVectors) {
  // RFC 3720 B.4 and the usual check value.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  // Extending in pieces gives the checksum of the whole, at every split.
  const std::string s = "a longer text that crosses several eight-byte words";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(crc32c_extend(crc32c_extend(0, s.data(), cut), s.data() + cut, s.size() - cut), crc32c(s));
  }
}

TEST(SegmentFormat, RecordRoundTripsAndEveryFlippedByteIsCaught) {
  std::string buf, scratch;
  StoredMessage m{42, 1700000000123, "player-7", "id-9", R"({"k":"v"})"};
  append_record(buf, m, scratch);
  RecordView r;
  ASSERT_EQ(parse_record(buf, r), Parse::kOk);
  EXPECT_EQ(r.offset, 42u);
  EXPECT_EQ(r.size, buf.size());
  for (size_t i = 0; i < buf.size(); ++i) {
    std::string bad = buf;
    bad[i] ^= 0x10;
    RecordView x;
    EXPECT_NE(parse_record(bad, x), Parse::kOk) << "byte " << i;
  }
  for (size_t n = 0; n < buf.size(); ++n) {
    RecordView x;
    EXPECT_EQ(parse_record(std::string_view(buf).substr(0, n), x), Parse::kShort) << n;
  }
}

TEST(SegmentFormat, IndexRoundTripsAndRejectsDamage) {
  SegmentMeta m;
  m.base = 100;
  m.last = 250;
  m.bytes = 123456;
  m.max_ts = 1700000000999;
  m.records = 151;
  m.has_ids = true;
  m.index = {{100, 16}, {180, 40000}, {240, 100000}};
  std::string bytes;
  encode_index(m, bytes);
  SegmentMeta back;
  ASSERT_TRUE(decode_index(bytes, back));
  EXPECT_EQ(back.base, 100u);
  EXPECT_EQ(back.last, 250u);
  EXPECT_EQ(back.bytes, 123456u);
  EXPECT_EQ(back.max_ts, 1700000000999);
  EXPECT_EQ(back.records, 151u);
  EXPECT_TRUE(back.has_ids);
  ASSERT_EQ(back.index.size(), 3u);
  EXPECT_EQ(back.index[1].offset, 180u);
  EXPECT_EQ(back.index[1].pos, 40000u);
  bytes[20] ^= 1;
  EXPECT_FALSE(decode_index(bytes, back));
  EXPECT_FALSE(decode_index(std::string_view(bytes).substr(0, 30), back));
}

TEST(SegmentFormat, FileNamesSortByBase) {
  EXPECT_EQ(segment_file_name(7), "00000000000000000007.log");
  uint64_t b = 0;
  EXPECT_TRUE(parse_segment_file_name("00000000000000000007.log", b));
  EXPECT_EQ(b, 7u);
  EXPECT_FALSE(parse_segment_file_name("00000000000000000007.idx", b));
  EXPECT_FALSE(parse_segment_file_name("0000000000000000007.log", b));
  EXPECT_FALSE(parse_segment_file_name("9999999999999999999x.log", b));
  EXPECT_FALSE(parse_segment_file_name("99999999999999999999.log", b));  // above 2^64
}

}  // namespace
}  // namespace parley::store::segment
