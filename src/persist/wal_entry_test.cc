// The WAL entries as Valkey sends them (RESP parsed by hiredis's reader, as the
// persister's link does): rows out of good entries, unusable entries marked
// rather than trusted, replies of another shape refused.
#include "persist/wal_entry.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>

namespace parley::persist {
namespace {

struct Free {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Owned = std::unique_ptr<redisReply, Free>;

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }

std::string entry(const std::string& id, const std::vector<std::string>& fields) {
  std::string out = "*2\r\n" + bulk(id) + "*" + std::to_string(fields.size()) + "\r\n";
  for (const auto& f : fields) out += bulk(f);
  return out;
}

// [[stream, [entries...]]]
std::string read_reply(const std::vector<std::string>& entries) {
  std::string out = "*1\r\n*2\r\n" + bulk("{demo.p3}:w") + "*" + std::to_string(entries.size()) + "\r\n";
  for (const auto& e : entries) out += e;
  return out;
}

Owned parse(const std::string& resp) {
  redisReader* r = redisReaderCreate();
  redisReaderFeed(r, resp.data(), resp.size());
  void* out = nullptr;
  EXPECT_EQ(redisReaderGetReply(r, &out), REDIS_OK);
  redisReaderFree(r);
  return Owned(static_cast<redisReply*>(out));
}

std::vector<std::string> good(const std::string& seq, const std::string& body) {
  return {"c", "chat:room", "s", seq, "f", "alice", "i", "m1", "t", "1700000000123", "b", body};
}

TEST(WalEntry, GoodEntriesBecomeRowsOfTheStreamsTenant) {
  auto r = parse(read_reply({entry("1-0", good("7", "{\"t\":\"h\\u00e9\"}")), entry("2-0", good("8", "{}"))}));
  auto got = parse_read(r.get(), "demo");
  ASSERT_TRUE(got.is_ok()) << got.error().msg;
  ASSERT_EQ(got->size(), 2u);
  const WalEntry& e = (*got)[0];
  EXPECT_EQ(e.id, "1-0");
  ASSERT_TRUE(e.row.has_value());
  EXPECT_EQ(e.row->tenant, "demo");
  EXPECT_EQ(e.row->channel, "chat:room");
  EXPECT_EQ(e.row->seq, 7u);
  EXPECT_EQ(e.row->ts_ms, 1700000000123);
  EXPECT_EQ(e.row->sender, "alice");
  EXPECT_EQ(e.row->msg_id, "m1");
  EXPECT_EQ(e.row->body, "{\"t\":\"h\\u00e9\"}");
  EXPECT_EQ((*got)[1].row->seq, 8u);
}

TEST(WalEntry, NilReplyIsNoEntries) {
  auto r = parse("*-1\r\n");
  auto got = parse_read(r.get(), "demo");
  ASSERT_TRUE(got.is_ok());
  EXPECT_TRUE(got->empty());
}

TEST(WalEntry, ADeletedPendingEntryHasNoRow) {
  auto r = parse(read_reply({"*2\r\n" + bulk("5-0") + "*-1\r\n"}));
  auto got = parse_read(r.get(), "demo");
  ASSERT_TRUE(got.is_ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_TRUE((*got)[0].deleted);
  EXPECT_FALSE((*got)[0].row.has_value());
}

TEST(WalEntry, EntriesPostgresCouldNotStoreOrWithoutTheirFieldsHaveNoRow) {
  std::vector<std::string> no_seq = {"c", "chat:room", "f", "a", "i", "", "t", "1", "b", "{}"};
  auto r = parse(read_reply({entry("1-0", no_seq), entry("2-0", good("x1", "{}")),
                             entry("3-0", good("0", "{}")), entry("4-0", good("9", std::string("{\"a\":\0}", 8))),
                             entry("5-0", good("9", "{\"a\":\"\xff\"}")), entry("6-0", good("9", "{}"))}));
  auto got = parse_read(r.get(), "demo");
  ASSERT_TRUE(got.is_ok()) << got.error().msg;
  ASSERT_EQ(got->size(), 6u);
  for (size_t i = 0; i < 5; ++i) EXPECT_FALSE((*got)[i].row.has_value()) << i;
  EXPECT_TRUE((*got)[5].row.has_value());
}

TEST(WalEntry, RepliesOfAnotherShapeAreErrors) {
  EXPECT_FALSE(parse_read(parse(":3\r\n").get(), "demo").is_ok());
  EXPECT_FALSE(parse_read(parse("-NOGROUP no such key\r\n").get(), "demo").is_ok());
  EXPECT_FALSE(parse_read(parse("*1\r\n*1\r\n" + bulk("k")).get(), "demo").is_ok());
  EXPECT_FALSE(parse_read(parse(read_reply({"*1\r\n" + bulk("1-0")})).get(), "demo").is_ok());
}

TEST(WalEntry, ClaimRepliesCarryTheNextCursor) {
  const std::string resp = "*3\r\n" + bulk("17-3") + "*1\r\n" + entry("9-0", good("4", "{}")) + "*0\r\n";
  auto c = parse_claim(parse(resp).get(), "demo");
  ASSERT_TRUE(c.is_ok()) << c.error().msg;
  EXPECT_EQ(c->cursor, "17-3");
  ASSERT_EQ(c->entries.size(), 1u);
  EXPECT_EQ(c->entries[0].row->seq, 4u);
}

TEST(WalEntry, StorableTextIsUtf8WithoutNul) {
  EXPECT_TRUE(storable_text(""));
  EXPECT_TRUE(storable_text("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(storable_text(std::string("a\0b", 3)));
  EXPECT_FALSE(storable_text("\xc3"));            // truncated
  EXPECT_FALSE(storable_text("\xc0\xaf"));        // overlong
  EXPECT_FALSE(storable_text("\xed\xa0\x80"));    // surrogate
  EXPECT_FALSE(storable_text("\xf4\x90\x80\x80")); // past U+10FFFF
}

}  // namespace
}  // namespace parley::persist
