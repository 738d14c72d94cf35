#include "store/record_codec.h"

#include <gtest/gtest.h>

#include "store/dedupe_expiry_filter.h"

namespace parley::store {
namespace {

std::string message_key(const ChannelKey& key, uint64_t seq) {
  std::string k = channel_prefix(kMessageTag, key);
  append_seq(k, seq);
  return k;
}

TEST(RecordCodec, MessageKeysOfAChannelSortBySeqInsideItsPrefixBounds) {
  ChannelKey a{"t", "a"};
  std::string prefix = channel_prefix(kMessageTag, a);
  std::string upper = prefix_upper_bound(prefix);
  uint64_t seqs[] = {0, 1, 255, 256, 65536, uint64_t{1} << 40, UINT64_MAX};
  for (size_t i = 0; i + 1 < std::size(seqs); ++i) {
    EXPECT_LT(message_key(a, seqs[i]), message_key(a, seqs[i + 1]));
  }
  for (uint64_t s : seqs) {
    std::string k = message_key(a, s);
    EXPECT_GE(k, prefix);
    EXPECT_LT(k, upper);
    uint64_t back = 0;
    ASSERT_TRUE(parse_message_seq(k, prefix.size(), back));
    EXPECT_EQ(back, s);
  }
  // A channel whose name extends "a" sorts outside a's bounds.
  EXPECT_GE(message_key({"t", "a:b"}, 0), upper);
  EXPECT_GE(message_key({"t", "a\x01"}, 0), upper);
}

TEST(RecordCodec, MessageValueRoundTripsAndRejectsDamage) {
  StoredMessage m{0, 1764460800123, "u1", std::string("i\0d", 3), R"({"x":[1,2]})"};
  std::string v;
  encode_message_value(m, v);
  StoredMessage back;
  ASSERT_TRUE(decode_message_value(v, back));
  EXPECT_EQ(back.ts_ms, m.ts_ms);
  EXPECT_EQ(back.from, m.from);
  EXPECT_EQ(back.id, m.id);
  EXPECT_EQ(back.body, m.body);
  EXPECT_FALSE(decode_message_value(v.substr(0, v.size() - 1), back));
  EXPECT_FALSE(decode_message_value(v + "x", back));
  EXPECT_FALSE(decode_message_value("", back));
  std::string other_format = v;
  other_format[0] = 9;
  EXPECT_FALSE(decode_message_value(other_format, back));
}

TEST(RecordCodec, ModerationFieldsRoundTripAndAPlainMessageKeepsTheFirstFormat) {
  StoredMessage plain{0, 5, "u1", "i", "1"};
  std::string v1;
  encode_message_value(plain, v1);
  EXPECT_EQ(v1[0], 1);  // earlier builds still read it
  StoredMessage edit{0, 7, "mod", "", R"({"t":"fixed"})"};
  edit.kind = EntryKind::kEdit;
  edit.target = 300;
  StoredMessage tomb{0, 5, "u1", "i", "null"};
  tomb.deleted = true;
  tomb.edited_ms = 6;
  for (const StoredMessage* m : {&edit, &tomb}) {
    std::string v;
    encode_message_value(*m, v);
    EXPECT_EQ(v[0], 2);
    StoredMessage back;
    ASSERT_TRUE(decode_message_value(v, back));
    EXPECT_EQ(back.kind, m->kind);
    EXPECT_EQ(back.target, m->target);
    EXPECT_EQ(back.edited_ms, m->edited_ms);
    EXPECT_EQ(back.deleted, m->deleted);
    EXPECT_EQ(back.body, m->body);
    EXPECT_EQ(back.from, m->from);
    EXPECT_FALSE(decode_message_value(v.substr(0, v.size() - 1), back));
    EXPECT_FALSE(decode_message_value(v + "x", back));
  }
  // Decoding a first-format value over a moderated one clears what it had.
  StoredMessage reused = tomb;
  ASSERT_TRUE(decode_message_value(v1, reused));
  EXPECT_FALSE(reused.deleted);
  EXPECT_EQ(reused.edited_ms, 0);
  EXPECT_EQ(reused.kind, EntryKind::kMsg);
}

TEST(RecordCodec, DedupeSuffixSplitsAtTheFirstNul) {
  std::string from, id;
  ASSERT_TRUE(parse_dedupe_suffix(kLegacyDedupeTag, std::string_view("u1\0a\0b", 6), from, id));
  EXPECT_EQ(from, "u1");
  EXPECT_EQ(id, std::string("a\0b", 3));
  EXPECT_FALSE(parse_dedupe_suffix(kLegacyDedupeTag, "no-separator", from, id));
}

TEST(RecordCodec, DedupeRecordKeysOfPairsThatShareBytesDiffer) {
  using namespace std::string_literals;
  const ChannelKey ch{"t", "c"};
  const std::string a = dedupe_record_key(ch, 7, DedupeKey("a", "b\0c"s));
  const std::string b = dedupe_record_key(ch, 7, DedupeKey("a\0b"s, "c"));
  EXPECT_NE(a, b);
  const std::string prefix = channel_prefix(kDedupeTag, ch);
  ASSERT_EQ(a.compare(0, prefix.size(), prefix), 0);
  std::string from, id;
  ASSERT_TRUE(parse_dedupe_suffix(kDedupeTag, std::string_view(b).substr(prefix.size()), from, id));
  EXPECT_EQ(from, "a\0b"s);
  EXPECT_EQ(id, "c");
  EXPECT_FALSE(parse_dedupe_suffix(kDedupeTag, std::string(8, '\0') + "\x05" "ab", from, id));  // length past the end
  EXPECT_FALSE(parse_dedupe_suffix(kDedupeTag, std::string(8, '\0'), from, id));  // seq only
  // The id-ordered layout (issue 11 until the seq-ordered one): no seq in the key.
  const std::string old = channel_prefix(kIdDedupeTag, ch) + std::string(DedupeKey("u", "i").bytes());
  ASSERT_TRUE(parse_dedupe_suffix(kIdDedupeTag, std::string_view(old).substr(prefix.size()), from, id));
  EXPECT_EQ(from, "u");
  EXPECT_EQ(id, "i");
}

// A channel's dedupe records sort by seq, whatever their senders and ids: each new
// one lands at the end of the channel's run (the memtable insert hint's domain).
TEST(RecordCodec, DedupeRecordKeysSortBySeqWithinTheirChannel) {
  const ChannelKey ch{"t", "c"};
  const std::string k1 = dedupe_record_key(ch, 1, DedupeKey("zz", "zz"));
  const std::string k2 = dedupe_record_key(ch, 2, DedupeKey("a", "a"));
  const std::string k256 = dedupe_record_key(ch, 256, DedupeKey("a", "a"));
  EXPECT_LT(k1, k2);
  EXPECT_LT(k2, k256);
  const std::string prefix = channel_prefix(kDedupeTag, ch);
  EXPECT_LT(k256, prefix_upper_bound(prefix));
  EXPECT_EQ(k1.compare(0, prefix.size(), prefix), 0);
}

int64_t fixed_now() { return 10'000; }

TEST(DedupeExpiryFilter, DropsOnlyExpiredDedupeRecords) {
  DedupeExpiryFilter filter(&fixed_now);
  std::string dkey = dedupe_record_key({"t", "c"}, 1, DedupeKey("u1", "m1"));
  std::string expired, live;
  encode_dedupe_value({1, 5'000, 9'999}, expired);
  encode_dedupe_value({2, 5'000, 10'000}, live);
  std::string nv;
  bool changed = false;
  EXPECT_TRUE(filter.Filter(0, dkey, expired, &nv, &changed));
  EXPECT_FALSE(filter.Filter(0, dkey, live, &nv, &changed));
  EXPECT_FALSE(filter.Filter(0, dkey, "garbage", &nv, &changed));
  // Records of the earlier layouts expire the same way.
  std::string by_id = channel_prefix(kIdDedupeTag, {"t", "c"}) + std::string(DedupeKey("u1", "m1").bytes());
  EXPECT_TRUE(filter.Filter(0, by_id, expired, &nv, &changed));
  EXPECT_FALSE(filter.Filter(0, by_id, live, &nv, &changed));
  std::string legacy = channel_prefix(kLegacyDedupeTag, {"t", "c"}) + std::string("u1\0m1", 5);
  EXPECT_TRUE(filter.Filter(0, legacy, expired, &nv, &changed));
  EXPECT_FALSE(filter.Filter(0, legacy, live, &nv, &changed));
  // A message record is never dropped, whatever its bytes look like.
  EXPECT_FALSE(filter.Filter(0, message_key({"t", "c"}, 1), expired, &nv, &changed));
}

}  // namespace
}  // namespace parley::store
