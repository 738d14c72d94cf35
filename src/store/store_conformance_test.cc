// The contract of store.h, run against every Store implementation.
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "store/store.h"
#include "store/store_policy.h"
#include "store/store_test_util.h"
#include "store/valkey/valkey_store.h"
#include "support/redis_server.h"

namespace parley::store {
namespace {

using testing::append_sync;
using testing::read_after_sync;
using testing::read_before_sync;
using testing::recover_sync;
using testing::make_msg;
using testing::make_req;
using testing::seq_range;
using testing::seqs_of;
using testing::TempDir;

struct StoreKind {
  std::string name;
  std::function<std::unique_ptr<Store>(const std::string& dir)> make;
};

std::unique_ptr<Store> make_embedded(const std::string& dir) {
  auto r = open_embedded_store(EmbeddedOptions{dir + "/db"});
  return r ? std::move(*r) : nullptr;
}

// The embedded store with every channel in its segment log (store/segment/).
std::unique_ptr<Store> make_embedded_segment(const std::string& dir) {
  EmbeddedOptions o{dir + "/db"};
  o.topic_log = TopicLog::kSegment;
  o.is_partition = [](const ChannelId&) { return true; };
  o.segment_bytes = 8192;  // many segments per channel
  auto r = open_embedded_store(o);
  return r ? std::move(*r) : nullptr;
}

// A fresh keyspace on the test binary's redis-server (tests/support/redis_server.h).
std::unique_ptr<Store> make_valkey(const std::string&) {
  auto& redis = parley::testing::shared_redis();
  if (!redis.ok() || redis.command({"FLUSHALL"}) != "OK") return nullptr;
  valkey::ValkeyOptions o;
  o.nodes = {redis.address()};
  auto r = valkey::ValkeyStore::open(testing::test_loops(), o);
  return r ? std::unique_ptr<Store>(std::move(*r)) : nullptr;
}

// The same on the 3-master cluster: every partition's keys on the master that
// owns its slot.
std::unique_ptr<Store> make_valkey_cluster(const std::string&) {
  auto& cluster = parley::testing::shared_redis_cluster();
  if (!cluster.ok()) return nullptr;
  cluster.flush_all();
  valkey::ValkeyOptions o;
  o.nodes = cluster.addresses();
  o.cluster = true;
  auto r = valkey::ValkeyStore::open(testing::test_loops(), o);
  return r ? std::unique_ptr<Store>(std::move(*r)) : nullptr;
}

class StoreConformance : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    store_ = GetParam().make(dir_.path());
    ASSERT_NE(store_, nullptr);
  }

  // Appends seqs first..last to `key`, waiting for each.
  void fill(const ChannelKey& key, uint64_t first, uint64_t last, uint32_t history_limit = 1000) {
    for (uint64_t s = first; s <= last; ++s) {
      ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(s, now_ + int64_t(s)), history_limit)));
    }
  }

  std::vector<uint64_t> after(const ChannelKey& key, uint64_t seq, uint32_t limit) {
    auto r = read_after_sync(*store_, key, seq, limit);
    EXPECT_TRUE(r.is_ok());
    return r ? seqs_of(*r) : std::vector<uint64_t>{};
  }

  std::vector<uint64_t> before(const ChannelKey& key, uint64_t seq, uint32_t limit) {
    auto r = read_before_sync(*store_, key, seq, limit);
    EXPECT_TRUE(r.is_ok());
    return r ? seqs_of(*r) : std::vector<uint64_t>{};
  }

  // Realistic timestamps: the embedded store's compaction filter expires dedupe
  // records against the wall clock.
  const int64_t now_ = wall_ms();
  const ChannelKey lobby_{"demo", "chat:lobby"};
  TempDir dir_;
  std::unique_ptr<Store> store_;
};

// PROTOCOL.md "Moderation": an edit or delete is an entry of its own, and its
// append rewrites the target to its current version, which every read answers.
TEST_P(StoreConformance, AModerationEventRewritesItsTargetsCurrentVersion) {
  // The segment log holds topic partitions only, whose events are never edited.
  if (GetParam().name == "embedded_segment") GTEST_SKIP() << "topic partitions have no moderation";
  fill(lobby_, 1, 2);
  auto orig = read_after_sync(*store_, lobby_, 0, 2);
  ASSERT_TRUE(orig.is_ok());
  ASSERT_EQ(orig->size(), 2u);
  StoredMessage edit = make_msg(3, now_ + 3, "mod", "", R"({"t":"fixed"})");
  edit.kind = EntryKind::kEdit;
  edit.target = 1;
  AppendRequest e = make_req(lobby_, edit);
  e.amended = (*orig)[0];
  e.amended->body = R"({"t":"fixed"})";
  e.amended->edited_ms = now_ + 3;
  ASSERT_TRUE(append_sync(*store_, std::move(e)));
  StoredMessage del = make_msg(4, now_ + 4, "mod", "", "null");
  del.kind = EntryKind::kDelete;
  del.target = 2;
  AppendRequest d = make_req(lobby_, del);
  d.amended = (*orig)[1];
  d.amended->body = "null";
  d.amended->deleted = true;
  ASSERT_TRUE(append_sync(*store_, std::move(d)));

  for (auto r : {read_after_sync(*store_, lobby_, 0, 10), read_before_sync(*store_, lobby_, 5, 10)}) {
    ASSERT_TRUE(r.is_ok());
    ASSERT_EQ(seqs_of(*r), seq_range(1, 4));
    const auto& m = *r;
    EXPECT_EQ(m[0].kind, EntryKind::kMsg);
    EXPECT_EQ(m[0].body, R"({"t":"fixed"})");
    EXPECT_EQ(m[0].edited_ms, now_ + 3);
    EXPECT_EQ(m[0].from, (*orig)[0].from);
    EXPECT_EQ(m[0].id, (*orig)[0].id);
    EXPECT_EQ(m[0].ts_ms, (*orig)[0].ts_ms);
    EXPECT_TRUE(m[1].deleted);
    EXPECT_EQ(m[2].kind, EntryKind::kEdit);
    EXPECT_EQ(m[2].target, 1u);
    EXPECT_EQ(m[2].from, "mod");
    EXPECT_EQ(m[2].body, R"({"t":"fixed"})");
    EXPECT_EQ(m[3].kind, EntryKind::kDelete);
    EXPECT_EQ(m[3].target, 2u);
  }
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec.is_ok());
  EXPECT_EQ(rec->last_seq, 4u);
}

// Several nodes (valkey): two nodes may both have read a message before one
// deleted it; the other's edit, appended after the delete, is an entry that
// changes nothing (PROTOCOL.md: a delete is final).
TEST_P(StoreConformance, AnEditAppendedAfterADeleteLeavesTheTombstone) {
  if (!store_->assigns_seq()) GTEST_SKIP() << "one node: its shard refuses such an edit before appending";
  StoredMessage m = make_msg(0, now_, "u1", "a", "1");
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, m)));
  auto orig = read_after_sync(*store_, lobby_, 0, 1);
  ASSERT_TRUE(orig.is_ok());
  ASSERT_EQ(orig->size(), 1u);
  StoredMessage del = make_msg(0, now_ + 1, "mod", "", "null");
  del.kind = EntryKind::kDelete;
  del.target = 1;
  AppendRequest d = make_req(lobby_, del);
  d.amended = orig->front();
  d.amended->deleted = true;
  d.amended->body = "null";
  ASSERT_TRUE(append_sync(*store_, std::move(d)));
  StoredMessage edit = make_msg(0, now_ + 2, "u1", "", "2");
  edit.kind = EntryKind::kEdit;
  edit.target = 1;
  AppendRequest e = make_req(lobby_, edit);
  e.amended = orig->front();  // read before the delete
  e.amended->body = "2";
  e.amended->edited_ms = now_ + 2;
  ASSERT_TRUE(append_sync(*store_, std::move(e)));
  auto r = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(seqs_of(*r), seq_range(1, 3));
  EXPECT_TRUE((*r)[0].deleted);
  EXPECT_EQ((*r)[0].edited_ms, 0);
  EXPECT_EQ((*r)[2].kind, EntryKind::kEdit);
}

TEST_P(StoreConformance, EmptyChannelHasNothingToRecoverOrRead) {
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 0u);
  EXPECT_TRUE(rec->dedupe.empty());
  EXPECT_TRUE(after(lobby_, 0, 50).empty());
  EXPECT_TRUE(before(lobby_, UINT64_MAX, 50).empty());
  EXPECT_EQ(store_->pending(), 0u);
}

TEST_P(StoreConformance, ReadAfterReturnsOldestFirstUpToLimit) {
  fill(lobby_, 1, 20);
  EXPECT_EQ(after(lobby_, 0, 50), seq_range(1, 20));
  EXPECT_EQ(after(lobby_, 0, 5), seq_range(1, 5));
  EXPECT_EQ(after(lobby_, 7, 3), seq_range(8, 10));
  EXPECT_EQ(after(lobby_, 17, 50), seq_range(18, 20));
}

TEST_P(StoreConformance, ReadBeforeReturnsTheNewestBelowBoundOldestFirst) {
  fill(lobby_, 1, 20);
  EXPECT_EQ(before(lobby_, UINT64_MAX, 5), seq_range(16, 20));
  EXPECT_EQ(before(lobby_, 21, 50), seq_range(1, 20));
  EXPECT_EQ(before(lobby_, 10, 3), seq_range(7, 9));
  EXPECT_EQ(before(lobby_, 4, 50), seq_range(1, 3));
}

TEST_P(StoreConformance, ReadsAtTheEdgesAreEmpty) {
  fill(lobby_, 1, 5);
  EXPECT_TRUE(after(lobby_, 5, 50).empty());
  EXPECT_TRUE(after(lobby_, 500, 50).empty());
  EXPECT_TRUE(after(lobby_, UINT64_MAX, 50).empty());
  EXPECT_TRUE(after(lobby_, 0, 0).empty());
  EXPECT_TRUE(before(lobby_, 1, 50).empty());
  EXPECT_TRUE(before(lobby_, 0, 50).empty());
  EXPECT_TRUE(before(lobby_, UINT64_MAX, 0).empty());
}

TEST_P(StoreConformance, MessagesRoundTripEveryField) {
  std::vector<StoredMessage> in = {
      {1, now_, "u1", "c-1", R"({"text":"h\u00e9llo","n":[1,2,3]})"},
      {2, now_ + 1, "server", "", R"("plain string")"},
      {3, now_ + 2, "user@x", std::string("id\0with\0nul", 11), "null"},
      {4, -5, "", "x", "{}"},
  };
  for (const auto& m : in) ASSERT_TRUE(append_sync(*store_, make_req(lobby_, m)));
  auto out = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].seq, in[i].seq);
    EXPECT_EQ((*out)[i].ts_ms, in[i].ts_ms);
    EXPECT_EQ((*out)[i].from, in[i].from);
    EXPECT_EQ((*out)[i].id, in[i].id);
    EXPECT_EQ((*out)[i].body, in[i].body);
  }
}

TEST_P(StoreConformance, LargeBodiesRoundTrip) {
  std::string big(1 << 20, 'a');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('0' + i % 10);
  for (uint64_t s = 1; s <= 3; ++s) {
    std::string body = "\"" + big + std::to_string(s) + "\"";
    ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(s, now_, "u1", "", body))));
  }
  auto out = read_before_sync(*store_, lobby_, UINT64_MAX, 10);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 3u);
  for (uint64_t s = 1; s <= 3; ++s) {
    EXPECT_EQ((*out)[s - 1].body, "\"" + big + std::to_string(s) + "\"");
  }
}

TEST_P(StoreConformance, CompletionsRunInSubmissionOrderPerChannel) {
  const ChannelKey chans[] = {{"demo", "a"}, {"demo", "b"}, {"demo", "c"}};
  std::mutex mu;
  std::map<std::string, std::vector<uint64_t>> completed;
  int failures = 0;
  for (uint64_t s = 1; s <= 300; ++s) {
    for (const auto& ch : chans) {
      store_->append(make_req(ch, make_msg(s, now_)), [&, name = ch.channel, s](AppendOutcome outcome) {
                           const Status st = outcome.status();
        std::lock_guard lock(mu);
        if (!st) ++failures;
        completed[name].push_back(s);
      });
    }
  }
  store_->flush();
  EXPECT_EQ(store_->pending(), 0u);
  std::lock_guard lock(mu);
  EXPECT_EQ(failures, 0);
  for (const auto& ch : chans) EXPECT_EQ(completed[ch.channel], seq_range(1, 300));
}

TEST_P(StoreConformance, FlushWaitsForEveryAppendSubmittedBefore) {
  std::atomic<int> done{0};
  for (uint64_t s = 1; s <= 1000; ++s) {
    store_->append(make_req(lobby_, make_msg(s, now_)), [&](AppendOutcome) { ++done; });
  }
  store_->flush();
  EXPECT_EQ(done.load(), 1000);
  EXPECT_EQ(store_->pending(), 0u);
}

TEST_P(StoreConformance, RecoverReturnsLastSeqAndDedupeEntriesFromTheCutoff) {
  for (uint64_t s = 1; s <= 10; ++s) {
    auto msg = make_msg(s, now_ + int64_t(s) * 1000, "u" + std::to_string(s % 2));
    ASSERT_TRUE(append_sync(*store_, make_req(lobby_, msg)));
  }
  auto rec = recover_sync(*store_, lobby_, now_ + 6000);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 10u);
  std::vector<DedupeEntry> got = rec->dedupe;
  std::sort(got.begin(), got.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    uint64_t s = 6 + i;
    EXPECT_EQ(got[i].seq, s);
    EXPECT_EQ(got[i].ts_ms, now_ + int64_t(s) * 1000);
    EXPECT_EQ(got[i].from, "u" + std::to_string(s % 2));
    EXPECT_EQ(got[i].id, "m" + std::to_string(s));
  }
}

TEST_P(StoreConformance, AppendWithoutIdLeavesNoDedupeEntry) {
  StoredMessage m{1, now_, "server", "", "{}"};
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, m)));
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 1u);
  EXPECT_TRUE(rec->dedupe.empty());
}

TEST_P(StoreConformance, ReusedDedupeIdRecoversItsNewestSeq) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_, "u1", "same"))));
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(2, now_ + 1, "u1", "same"))));
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->dedupe.size(), 1u);
  EXPECT_EQ(rec->dedupe[0].seq, 2u);
}

TEST_P(StoreConformance, StaleSeqIsRejectedWithoutOverwriting) {
  fill(lobby_, 1, 2);
  Status st = append_sync(*store_, make_req(lobby_, make_msg(2, now_, "u9", "", R"("new")")));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kInternal);
  auto out = read_after_sync(*store_, lobby_, 1, 10);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].from, "u1");
  // Not a store failure: the channel goes on.
  EXPECT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(3, now_))));
}

TEST_P(StoreConformance, HistoryIsTrimmedButKeepsAtLeastTheLimit) {
  constexpr uint32_t kLimit = 10;
  fill(lobby_, 1, 300, kLimit);
  auto held = after(lobby_, 0, 1000);
  ASSERT_GE(held.size(), kLimit);
  EXPECT_LE(held.size(), history_max_held(kLimit));
  EXPECT_EQ(held, seq_range(301 - held.size(), 300));
  EXPECT_EQ(before(lobby_, UINT64_MAX, kLimit), seq_range(291, 300));
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 300u);
}

TEST_P(StoreConformance, HistoryLimitZeroStillKeepsTheLastSeq) {
  fill(lobby_, 1, 200, 0);
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 200u);
  auto last = before(lobby_, UINT64_MAX, 1);
  EXPECT_EQ(last, std::vector<uint64_t>{200});
}

TEST_P(StoreConformance, TenantsAndChannelsAreIsolated) {
  // Same channel name in two tenants, and names that are prefixes of each other.
  const ChannelKey keys[] = {{"t1", "lobby"}, {"t2", "lobby"}, {"t1", "lobby2"},
                             {"t1", "lob"},   {"t", "1lobby"}, {"t1l", "obby"}};
  for (size_t k = 0; k < std::size(keys); ++k) {
    for (uint64_t s = 1; s <= k + 1; ++s) {
      auto msg = make_msg(s, now_, "u1", "same-id", "\"" + keys[k].tenant + "/" + keys[k].channel + "\"");
      ASSERT_TRUE(append_sync(*store_, make_req(keys[k], msg)));
    }
  }
  for (size_t k = 0; k < std::size(keys); ++k) {
    SCOPED_TRACE(keys[k].tenant + "/" + keys[k].channel);
    auto rec = recover_sync(*store_, keys[k], 0);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->last_seq, k + 1);
    ASSERT_EQ(rec->dedupe.size(), 1u);
    EXPECT_EQ(rec->dedupe[0].seq, k + 1);
    auto msgs = read_after_sync(*store_, keys[k], 0, 100);
    ASSERT_TRUE(msgs);
    ASSERT_EQ(msgs->size(), k + 1);
    for (const auto& m : *msgs) EXPECT_EQ(m.body, "\"" + keys[k].tenant + "/" + keys[k].channel + "\"");
    EXPECT_EQ(before(keys[k], UINT64_MAX, 100).size(), k + 1);
  }
}

TEST_P(StoreConformance, ConcurrentAppendsKeepPerChannelOrder) {
  constexpr int kThreads = 4, kChannelsPerThread = 3;
  constexpr uint64_t kPerChannel = 400;
  std::mutex mu;
  std::map<std::string, std::vector<uint64_t>> completed;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread owns its channels, as a hub shard does.
      for (uint64_t s = 1; s <= kPerChannel; ++s) {
        for (int c = 0; c < kChannelsPerThread; ++c) {
          ChannelKey key{"demo", "t" + std::to_string(t) + "c" + std::to_string(c)};
          store_->append(make_req(key, make_msg(s, now_, "u" + std::to_string(t))),
                         [&, name = key.channel, s](AppendOutcome outcome) {
                           const Status st = outcome.status();
                           if (!st) ++failures;
                           std::lock_guard lock(mu);
                           completed[name].push_back(s);
                         });
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  store_->flush();
  EXPECT_EQ(failures.load(), 0);
  std::lock_guard lock(mu);
  ASSERT_EQ(completed.size(), size_t{kThreads * kChannelsPerThread});
  for (const auto& [name, seqs] : completed) {
    SCOPED_TRACE(name);
    EXPECT_EQ(seqs, seq_range(1, kPerChannel));
    auto stored = read_after_sync(*store_, ChannelKey{"demo", name}, 0, 1000);
    ASSERT_TRUE(stored);
    EXPECT_EQ(seqs_of(*stored), seq_range(1, kPerChannel));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllStores, StoreConformance,
    ::testing::Values(StoreKind{"memory", [](const std::string&) { return make_memory_store(); }},
                      StoreKind{"embedded", make_embedded},
                      StoreKind{"embedded_segment", make_embedded_segment},
                      StoreKind{"valkey", make_valkey},
                      StoreKind{"valkey_cluster", make_valkey_cluster}),
    [](const ::testing::TestParamInfo<StoreKind>& info) { return info.param.name; });

}  // namespace
}  // namespace parley::store
