// The memory store's bounds beyond the shared contract (issue 11, finding 8):
// history age, forgetting idle channels, the memory budget.
#include "store/memory_store.h"

#include <string>

#include <gtest/gtest.h>

#include "store/store_test_util.h"

namespace parley::store {
namespace {

using testing::append_sync;
using testing::make_msg;
using testing::make_req;
using testing::seqs_of;

constexpr int64_t kT0 = 1'764'460'800'000;

AppendRequest ttl_req(const ChannelKey& key, StoredMessage m, uint32_t ttl_s,
                      uint32_t dedupe_window_s = 120) {
  AppendRequest r = make_req(key, std::move(m), 1000, dedupe_window_s);
  r.history_ttl_s = ttl_s;
  return r;
}

std::vector<uint64_t> held(MemoryStore& s, const ChannelKey& key) {
  auto r = testing::read_after_sync(s, key, 0, 10'000);
  return r ? seqs_of(*r) : std::vector<uint64_t>{};
}

TEST(MemoryStore, MessagesOlderThanTheTtlGoOnAppendAndOnSweep) {
  MemoryStore s;
  const ChannelKey ch{"t", "tmp:a"};
  ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(1, kT0), 10)));
  ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(2, kT0 + 5'000), 10)));
  ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(3, kT0 + 12'000), 10)));
  EXPECT_EQ(held(s, ch), (std::vector<uint64_t>{2, 3}));  // 1 aged out as 3 came
  s.sweep(kT0 + 16'000);
  EXPECT_EQ(held(s, ch), (std::vector<uint64_t>{3}));
  // The seq counter stays while the channel is remembered.
  auto rec = testing::recover_sync(s, ch, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 3u);
}

TEST(MemoryStore, AnIdleChannelWithNothingLeftIsForgotten) {
  MemoryStore s(MemoryStoreOptions{0, 60'000});
  const ChannelKey ch{"t", "tmp:b"};
  ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(1, kT0), 10, 30)));
  EXPECT_EQ(s.channel_count(), 1u);
  EXPECT_GT(s.memory_bytes(), 0u);
  s.sweep(kT0 + 40'000);  // history and dedupe gone, but written 40 s ago
  EXPECT_EQ(s.channel_count(), 1u);
  s.sweep(kT0 + 61'000);
  EXPECT_EQ(s.channel_count(), 0u);
  EXPECT_EQ(s.memory_bytes(), 0u);
  auto rec = testing::recover_sync(s, ch, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 0u);
}

TEST(MemoryStore, AChannelWithHistoryIsKeptHoweverIdle) {
  MemoryStore s(MemoryStoreOptions{0, 60'000});
  const ChannelKey ch{"t", "chat:c"};
  ASSERT_TRUE(append_sync(s, make_req(ch, make_msg(1, kT0))));  // no ttl: durable on `memory`
  s.sweep(kT0 + 3'600'000);
  EXPECT_EQ(held(s, ch), (std::vector<uint64_t>{1}));
}

TEST(MemoryStore, OverBudgetTheLeastRecentlyWrittenHistoriesGoFirst) {
  MemoryStore s(MemoryStoreOptions{200'000, 600'000});
  const std::string body = "\"" + std::string(2000, 'x') + "\"";
  for (int c = 0; c < 10; ++c) {
    const ChannelKey ch{"t", "tmp:" + std::to_string(c)};
    for (uint64_t i = 1; i <= 20; ++i) {
      ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(i, kT0 + c * 1000 + int64_t(i), "u", "", body), 3600)));
    }
  }
  EXPECT_GT(s.memory_bytes(), 400'000u);
  s.sweep(kT0 + 20'000);
  EXPECT_LE(s.memory_bytes(), 200'000u);
  EXPECT_GT(s.budget_evictions(), 0u);
  EXPECT_TRUE(held(s, {"t", "tmp:0"}).empty());
  EXPECT_EQ(held(s, {"t", "tmp:9"}).size(), 20u);
  // Sequencing and dedupe survive the history's eviction.
  auto rec = testing::recover_sync(s, {"t", "tmp:0"}, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 20u);
  EXPECT_EQ(rec->dedupe.size(), 20u);
}

// Across the store's shards the evicted histories are exactly the least
// recently written ones, and a channel written again moves to the young end.
TEST(MemoryStore, BudgetEvictionFollowsTheGlobalWriteOrder) {
  MemoryStore s(MemoryStoreOptions{0, 600'000});
  const std::string body = "\"" + std::string(1000, 'x') + "\"";
  const int n = 200;
  for (int c = 0; c < n; ++c) {
    const ChannelKey ch{"t", "tmp:" + std::to_string(c)};
    ASSERT_TRUE(append_sync(s, ttl_req(ch, make_msg(1, kT0 + c, "u", "", body), 3600)));
  }
  // Channel 0 written again, last: the youngest now.
  ASSERT_TRUE(append_sync(s, ttl_req({"t", "tmp:0"}, make_msg(2, kT0 + n, "u", "", body), 3600)));
  const uint64_t full = s.memory_bytes();
  MemoryStore budgeted(MemoryStoreOptions{full / 2, 600'000});
  for (int c = 0; c < n; ++c) {
    ASSERT_TRUE(append_sync(budgeted, ttl_req({"t", "tmp:" + std::to_string(c)},
                                              make_msg(1, kT0 + c, "u", "", body), 3600)));
  }
  ASSERT_TRUE(append_sync(budgeted, ttl_req({"t", "tmp:0"}, make_msg(2, kT0 + n, "u", "", body), 3600)));
  budgeted.enforce_budget();
  EXPECT_LE(budgeted.memory_bytes(), full / 2);
  int kept_from = -1;  // the first channel (after 0) whose history is kept
  for (int c = 1; c < n; ++c) {
    const bool kept = !held(budgeted, {"t", "tmp:" + std::to_string(c)}).empty();
    if (kept && kept_from < 0) kept_from = c;
    if (kept_from >= 0) {
      EXPECT_TRUE(kept) << "tmp:" << c << " evicted after a younger one was kept";
    }
  }
  EXPECT_GT(kept_from, 1);
  EXPECT_EQ(held(budgeted, {"t", "tmp:0"}).size(), 2u) << "written last, evicted first";
}

TEST(MemoryStore, MemoryEstimateFollowsAppendsAndTrims) {
  MemoryStore s;
  const ChannelKey ch{"t", "tmp:d"};
  ASSERT_TRUE(append_sync(s, make_req(ch, make_msg(1, kT0, "u", "", "\"" + std::string(5000, 'y') + "\""))));
  const uint64_t one = s.memory_bytes();
  EXPECT_GT(one, 5000u);
  for (uint64_t i = 2; i <= 300; ++i) {
    ASSERT_TRUE(append_sync(s, make_req(ch, make_msg(i, kT0, "u", "", "\"" + std::string(5000, 'y') + "\""), 10)));
  }
  // history 10 (+ slack 64): never more than 74 messages of ~5 KB held.
  EXPECT_LT(s.memory_bytes(), 74u * 5200 + 100'000);
  EXPECT_GT(s.memory_bytes(), 10u * 5000);
}

}  // namespace
}  // namespace parley::store
