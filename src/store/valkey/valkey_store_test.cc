// The valkey store beyond the shared conformance suite: what only a shared store
// does (assigning seqs, answering duplicates), where its keys live, and how it
// behaves when Valkey hangs, crashes and comes back.
#include "store/valkey/valkey_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "store/store_test_util.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/scripts.h"
#include "store/valkey/valkey_test_util.h"
#include "support/redis_server.h"

namespace parley::store::valkey {
namespace {

using store::testing::append_outcome;
using store::testing::append_sync;
using store::testing::make_msg;
using store::testing::make_req;
using store::testing::read_after_sync;
using store::testing::recover_sync;
using store::testing::seqs_of;
using store::testing::seq_range;
using store::testing::TempDir;
using testing::open_on;

class ValkeyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& redis = parley::testing::shared_redis();
    ASSERT_TRUE(redis.ok()) << redis.why();
    ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
    store_ = open_on({redis.address()});
    ASSERT_NE(store_, nullptr);
  }
  const int64_t now_ = wall_ms();
  const ChannelKey lobby_{"demo", "chat:lobby"};
  std::unique_ptr<ValkeyStore> store_;
};

TEST_F(ValkeyStoreTest, ScriptAssignsSeqsWhenNoneIsProposed) {
  for (uint64_t s = 1; s <= 5; ++s) {
    auto out = append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "a" + std::to_string(s))));
    ASSERT_TRUE(out.status());
    EXPECT_EQ(out->seq, s);
    EXPECT_FALSE(out->dup);
  }
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 5));
}

TEST_F(ValkeyStoreTest, DuplicateWithinTheWindowAnswersTheOriginalSeqAndWritesNothing) {
  ASSERT_TRUE(append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "x"))).status());
  ASSERT_TRUE(append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u2", "x"))).status());
  auto again = append_outcome(*store_, make_req(lobby_, make_msg(0, now_ + 5, "u1", "x", R"("other")")));
  ASSERT_TRUE(again.status());
  EXPECT_EQ(again->seq, 1u);
  EXPECT_TRUE(again->dup);
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  // Past the window (120 s) the id is new again.
  auto later = append_outcome(*store_, make_req(lobby_, make_msg(0, now_ + 121'000, "u1", "x")));
  ASSERT_TRUE(later.status());
  EXPECT_EQ(later->seq, 3u);
  EXPECT_FALSE(later->dup);
}

TEST_F(ValkeyStoreTest, ProposedSeqThatWouldLeaveAGapIsRefusedRetryably) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_))));
  Status st = append_sync(*store_, make_req(lobby_, make_msg(3, now_)));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 1u);
}

TEST_F(ValkeyStoreTest, EveryCallIsOneKeyOfTheChannelsPartitionAndTheWalStreamHasTheMessage) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_, "u1", "m1", R"({"a":1})"))));
  auto& redis = parley::testing::shared_redis();
  const ChannelKeys k = channel_keys(lobby_, 64);
  EXPECT_EQ(k.tag, "{demo.p" + std::to_string(partition_of(lobby_, 64)) + "}");
  EXPECT_EQ(redis.command({"GET", k.seq}), "1");
  EXPECT_EQ(redis.command({"XLEN", k.history}), "1");
  EXPECT_EQ(redis.command({"XLEN", k.wal}), "1");
  const std::string wal = redis.command({"XRANGE", k.wal, "-", "+"});
  EXPECT_NE(wal.find("chat:lobby"), std::string::npos);
  EXPECT_NE(wal.find(R"({"a":1})"), std::string::npos);
  // Every key the store wrote carries the partition's tag.
  const std::string keys = redis.command({"KEYS", "*"});
  size_t n = 0;
  for (size_t p = 0; p < keys.size(); p = keys.find('\n', p) == std::string::npos ? keys.size() : keys.find('\n', p) + 1) {
    EXPECT_EQ(keys.compare(p, k.tag.size(), k.tag), 0) << keys;
    ++n;
  }
  EXPECT_EQ(n, 6u);  // seq, history, dedupe hash and zset, WAL, epoch
}

TEST_F(ValkeyStoreTest, ScriptFlushedOnTheServerIsLoadedAgain) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_))));
  auto& redis = parley::testing::shared_redis();
  ASSERT_EQ(redis.command({"SCRIPT", "FLUSH"}), "OK");
  // The first call after the flush may fail retryably; the store reloads and goes on.
  Status st = append_sync(*store_, make_req(lobby_, make_msg(2, now_)));
  if (!st) {
    EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
    st = append_sync(*store_, make_req(lobby_, make_msg(2, now_)));
  }
  EXPECT_TRUE(st);
  auto rec = recover_sync(*store_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 2u);
}

// With wait_replicas, appends sent together on a connection share one WAIT,
// and a duplicate's answer waits for it too: this lone server has no replica,
// so WAIT answers 0 and nothing is acknowledged, the duplicate included.
TEST_F(ValkeyStoreTest, WaitReplicasSendsOneWaitPerPipelineAndADuplicateWaitsForItToo) {
  auto& redis = parley::testing::shared_redis();
  ASSERT_TRUE(append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "x"))).status());
  ValkeyOptions o;
  o.nodes = {redis.address()};
  o.pool_size = 1;  // one connection, on loop 0
  o.wait_replicas = 1;
  o.wait_timeout_ms = 50;
  auto waits = ValkeyStore::open(store::testing::test_loops(), o);
  ASSERT_TRUE(waits);
  ASSERT_EQ(redis.command({"CONFIG", "RESETSTAT"}), "OK");
  constexpr int kAppends = 200;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<AppendOutcome> outs;
  auto collect = [&](AppendOutcome o) {
    std::lock_guard lock(mu);
    outs.push_back(std::move(o));
    cv.notify_all();
  };
  // Submitted from the connection's own loop in one task: one pipeline.
  store::testing::test_loops().run_on(0, [&] {
    for (int i = 0; i < kAppends; ++i) {
      const ChannelKey ch{"demo", "chat:w" + std::to_string(i % 10)};
      (*waits)->append(make_req(ch, make_msg(0, now_, "u1", "w" + std::to_string(i))), collect);
    }
    (*waits)->append(make_req(lobby_, make_msg(0, now_, "u1", "x")), collect);  // the duplicate
  });
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return outs.size() == kAppends + 1; }));
  for (const auto& o : outs) {
    ASSERT_FALSE(o.status());
    EXPECT_EQ(o.error().code, ErrorCode::kUnavailable);
  }
  EXPECT_NE(redis.command({"INFO", "commandstats"}).find("cmdstat_wait:calls=1,"), std::string::npos)
      << redis.command({"INFO", "commandstats"});
  EXPECT_EQ((*waits)->redirects().wait_short, uint64_t{kAppends + 1});
}

// On the 3-master cluster of the test binary (tests/support/redis_server.h).
class ValkeyClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& c = parley::testing::shared_redis_cluster();
    ASSERT_TRUE(c.ok()) << c.why();
    c.flush_all();
    store_ = open_on(c.addresses(), true);
    ASSERT_NE(store_, nullptr);
  }
  parley::testing::RedisCluster& cluster() { return parley::testing::shared_redis_cluster(); }
  const int64_t now_ = wall_ms();
  std::unique_ptr<ValkeyStore> store_;
};

TEST_F(ValkeyClusterTest, EveryKeyOfAPartitionIsInTheSlotTheServerComputesForItsTag) {
  auto& node = cluster().node(0);
  for (const char* tenant : {"demo", "game-1", "a.p1", "x_y@z"}) {
    for (int c = 0; c < 40; ++c) {
      const ChannelKey key{tenant, "chat:" + std::to_string(c)};
      const ChannelKeys k = channel_keys(key, 64);
      const std::string slot = node.command({"CLUSTER", "KEYSLOT", k.tag});
      EXPECT_EQ(slot, std::to_string(key_slot(k.tag)));
      for (const auto& name : {k.seq, k.history, k.dedupe, k.dedupe_by_time, k.wal}) {
        ASSERT_EQ(node.command({"CLUSTER", "KEYSLOT", name}), slot) << name;
      }
    }
  }
}

TEST_F(ValkeyClusterTest, PartitionsSpreadOverEveryMasterAndEachKeyIsWhereItsSlotIs) {
  for (int c = 0; c < 60; ++c) {
    const ChannelKey key{"demo", "room:" + std::to_string(c)};
    ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  }
  for (size_t i = 0; i < cluster().size(); ++i) {
    // Each master holds some of the channels, and only keys of slots it serves.
    EXPECT_NE(cluster().node(i).command({"DBSIZE"}), "0") << cluster().node(i).address();
  }
  for (int c = 0; c < 60; ++c) {
    const ChannelKey key{"demo", "room:" + std::to_string(c)};
    auto rec = recover_sync(*store_, key, 0);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->last_seq, 1u);
  }
}

// A slot on its way from one master to another, moved the way redis-cli
// --cluster reshard does: IMPORTING / MIGRATING, MIGRATE of its keys (all, or
// some first), then SETSLOT NODE on every master.
struct SlotMove {
  parley::testing::RedisCluster& cluster;
  std::string slot;
  size_t from = 0, to = 0;
  std::string src_id, dst_id;

  SlotMove(parley::testing::RedisCluster& c, const std::string& tag) : cluster(c), slot(std::to_string(key_slot(tag))) {
    for (size_t i = 0; i < cluster.size(); ++i) {
      if (cluster.node(i).command({"CLUSTER", "COUNTKEYSINSLOT", slot}) != "0") from = i;
    }
    to = (from + 1) % cluster.size();
    src_id = cluster.node(from).command({"CLUSTER", "MYID"});
    dst_id = cluster.node(to).command({"CLUSTER", "MYID"});
    EXPECT_EQ(cluster.node(to).command({"CLUSTER", "SETSLOT", slot, "IMPORTING", src_id}), "OK");
    EXPECT_EQ(cluster.node(from).command({"CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id}), "OK");
  }
  std::vector<std::string> keys_left() {
    const std::string keys = cluster.node(from).command({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
    std::vector<std::string> out;
    for (size_t p = 0; p < keys.size();) {
      const size_t nl = keys.find('\n', p);
      out.push_back(keys.substr(p, nl == std::string::npos ? std::string::npos : nl - p));
      p = nl == std::string::npos ? keys.size() : nl + 1;
    }
    return out;
  }
  void migrate(const std::vector<std::string>& keys) {
    std::vector<std::string> cmd = {"MIGRATE", "127.0.0.1", std::to_string(cluster.node(to).port()), "", "0", "5000", "KEYS"};
    cmd.insert(cmd.end(), keys.begin(), keys.end());
    EXPECT_EQ(cluster.node(from).command(cmd), "OK");
  }
  void finish() {
    for (size_t i = 0; i < cluster.size(); ++i) {
      EXPECT_EQ(cluster.node(i).command({"CLUSTER", "SETSLOT", slot, "NODE", dst_id}), "OK");
    }
  }
  // Back to no migration, the keys where they are (only when none has moved).
  void cancel() {
    EXPECT_EQ(cluster.node(from).command({"CLUSTER", "SETSLOT", slot, "STABLE"}), "OK");
    EXPECT_EQ(cluster.node(to).command({"CLUSTER", "SETSLOT", slot, "STABLE"}), "OK");
  }
};

TEST_F(ValkeyClusterTest, SlotMovedToAnotherMasterIsFollowedWithoutAFailureWhenTheHubGivesTheSeq) {
  const ChannelKey key{"demo", "moving"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  SlotMove move(cluster(), k.tag);
  move.migrate(move.keys_left());
  move.finish();
  // The store still sends the slot to its old master: MOVED, nothing written; the
  // call goes again to the new master, since the script refuses seq 2 out of turn.
  Status st = append_sync(*store_, make_req(key, make_msg(2, now_)));
  ASSERT_TRUE(st) << st.error().msg;
  auto stored = read_after_sync(*store_, key, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  EXPECT_EQ(cluster().node(move.to).command({"GET", k.seq}), "2");
  EXPECT_EQ(store_->redirects().moved, 1u);
}

TEST_F(ValkeyClusterTest, AppendWhoseSeqTheScriptAssignsFailsRetryablyOnceWhenItsSlotMoved) {
  const ChannelKey key{"demo", "moving-assigned"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_outcome(*store_, make_req(key, make_msg(0, now_, "u1", "a"))).status());
  SlotMove move(cluster(), k.tag);
  move.migrate(move.keys_left());
  move.finish();
  // Sent twice, it could land after a later append: it fails instead (retryable).
  auto out = append_outcome(*store_, make_req(key, make_msg(0, now_, "u1", "b")));
  ASSERT_FALSE(out.status());
  EXPECT_EQ(out.status().error().code, ErrorCode::kUnavailable);
  EXPECT_NE(out.status().error().msg.find("MOVED"), std::string::npos) << out.status().error().msg;
  // The failure completes before the store re-points the slot (so nothing of the
  // channel overtakes it): a retry sent at once may still meet the old master and
  // fail the same way; a client retries after retry_ms, by which time it cannot.
  for (int retry = 0; retry < 5 && !out.status(); ++retry) {
    EXPECT_EQ(out.status().error().code, ErrorCode::kUnavailable);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    out = append_outcome(*store_, make_req(key, make_msg(0, now_, "u1", "b")));
  }
  ASSERT_TRUE(out.status()) << out.status().error().msg;
  EXPECT_EQ(out->seq, 2u);
  EXPECT_EQ(cluster().node(move.to).command({"GET", k.seq}), "2");
}

TEST_F(ValkeyClusterTest, SlotBeingMigratedIsReachedThroughAskWithoutAFailure) {
  const ChannelKey key{"demo", "migrating"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  SlotMove move(cluster(), k.tag);
  move.migrate(move.keys_left());
  // The keys are on the importing node, the slot still on the old one: ASK.
  Status st = append_sync(*store_, make_req(key, make_msg(2, now_)));
  ASSERT_TRUE(st) << st.error().msg;
  auto stored = read_after_sync(*store_, key, 0, 10);
  ASSERT_TRUE(stored) << stored.error().msg;
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  EXPECT_GE(store_->redirects().ask, 1u);
  move.finish();
}

// With wait_replicas, the WAIT behind an append goes to the node that ran it: a
// script ASK-redirected to the importing master is waited for there, not on the
// master it was first sent to (whose replicas never see the write). This cluster
// has no replicas, so WAIT answers 0 and the append is not acknowledged.
TEST_F(ValkeyClusterTest, WaitReplicasWaitsOnTheMasterAnAskRedirectedAppendRanOn) {
  const ChannelKey key{"demo", "migrating-waits"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_outcome(*store_, make_req(key, make_msg(0, now_, "u1", "a"))).status());
  ValkeyOptions o;
  o.nodes = cluster().addresses();
  o.cluster = true;
  o.wait_replicas = 1;
  o.wait_timeout_ms = 50;
  auto waits = ValkeyStore::open(store::testing::test_loops(), o);
  ASSERT_TRUE(waits);
  SlotMove move(cluster(), k.tag);
  move.migrate(move.keys_left());
  for (size_t i = 0; i < cluster().size(); ++i) ASSERT_EQ(cluster().node(i).command({"CONFIG", "RESETSTAT"}), "OK");
  auto out = append_outcome(**waits, make_req(key, make_msg(0, now_, "u1", "b")));
  ASSERT_FALSE(out.status());
  EXPECT_EQ(out.status().error().code, ErrorCode::kUnavailable);
  EXPECT_NE(out.status().error().msg.find("replicas"), std::string::npos) << out.status().error().msg;
  EXPECT_GE((*waits)->redirects().ask, 1u);
  const std::string importing = cluster().node(move.to).command({"INFO", "commandstats"});
  EXPECT_NE(importing.find("cmdstat_wait:calls=1,"), std::string::npos) << importing;
  move.finish();
  // Written there all the same: a retry with the same id answers it as a duplicate.
  EXPECT_EQ(cluster().node(move.to).command({"GET", k.seq}), "2");
}

TEST_F(ValkeyClusterTest, HalfMigratedSlotAnswersTryAgainAndTheAppendsLandInOrderOnceItSettles) {
  const ChannelKey key{"demo", "half-migrated"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  SlotMove move(cluster(), k.tag);
  // Only the seq counter moves: the script's keys are now on two nodes, and either
  // node answers TRYAGAIN until the migration ends.
  move.migrate({k.seq});
  ASSERT_EQ(cluster().node(move.from).command({"EVAL", "return 1", "2", k.seq, k.history}).rfind("TRYAGAIN", 0), 0u);
  std::mutex mu;
  std::vector<uint64_t> order;
  std::vector<std::string> errors;
  std::promise<void> all;
  const uint64_t n = 5;
  const int64_t start = wall_ms();
  for (uint64_t s = 2; s < 2 + n; ++s) {
    store_->append(make_req(key, make_msg(s, now_)), [&, s](AppendOutcome o) {
      std::lock_guard lock(mu);
      order.push_back(s);
      if (!o.status()) errors.push_back(o.status().error().msg);
      if (order.size() == n) all.set_value();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  move.migrate(move.keys_left());
  move.finish();
  ASSERT_EQ(all.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
  // Retried with backoff, each call landed: nothing failed, in submission order.
  EXPECT_GE(wall_ms() - start, 150);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(order, seq_range(2, 1 + n));
  auto stored = read_after_sync(*store_, key, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 1 + n));
  EXPECT_EQ(cluster().node(move.to).command({"GET", k.seq}), std::to_string(1 + n));
  EXPECT_GE(store_->redirects().tryagain, n);
}

TEST_F(ValkeyClusterTest, AppendThatExpiresEveryDedupeEntryInAMigratingSlotWritesItsOwnEntry) {
  const ChannelKey key{"demo", "old-ids"};
  const ChannelKeys k = channel_keys(key, 64);
  // Seq 1's id is past the 120 s window by now: the next append expires it.
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_ - 600'000, "u1", "old"))));
  SlotMove move(cluster(), k.tag);
  // All keys still on the old master, which now refuses a write to a key it lacks
  // (ASK): the script must not delete a key and write it again.
  auto out = append_outcome(*store_, make_req(key, make_msg(2, now_, "u1", "new")));
  EXPECT_TRUE(out.status()) << out.status().error().msg;
  auto& src = cluster().node(move.from);
  EXPECT_EQ(src.command({"GET", k.seq}), "2");
  EXPECT_EQ(src.command({"HGET", k.dedupe, dedupe_field("u1", "new")}), "2:" + std::to_string(now_));
  EXPECT_EQ(src.command({"HGET", k.dedupe, dedupe_field("u1", "old")}), "(nil)");
  move.cancel();
}

// A server of its own: these tests stop and kill it.
class ValkeyFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.ok()) << redis_.why();
    store_ = open_on({redis_.address()}, false, 300);
    ASSERT_NE(store_, nullptr);
  }
  // Appends last_seq + 1 once the store answers again (recovering first, as a hub
  // shard does after a failure); the time it took, or -1 after `limit_ms`.
  int64_t wait_until_written(int64_t limit_ms) {
    const int64_t start = wall_ms();
    while (wall_ms() - start < limit_ms) {
      auto rec = recover_sync(*store_, lobby_, 0);
      if (rec && append_sync(*store_, make_req(lobby_, make_msg(rec->last_seq + 1, now_)))) {
        return wall_ms() - start;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  TempDir dir_;
  parley::testing::RedisServer redis_{dir_.sub("redis"), {false, "always"}};
  const int64_t now_ = wall_ms();
  const ChannelKey lobby_{"demo", "chat:lobby"};
  std::unique_ptr<ValkeyStore> store_;
};

TEST_F(ValkeyFaultTest, CrashedNodeAnswersUnavailableAndServiceResumesWhenItIsBack) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_))));
  EXPECT_TRUE(store_->health().writable);
  redis_.kill9();
  const int64_t t0 = wall_ms();
  Status st = append_sync(*store_, make_req(lobby_, make_msg(2, now_)));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_GT(st.error().retry_ms, 0);
  EXPECT_LT(wall_ms() - t0, 1000);
  auto r = read_after_sync(*store_, lobby_, 0, 10);
  EXPECT_FALSE(r);
  const StoreHealth h = store_->health();
  EXPECT_FALSE(h.writable);
  EXPECT_EQ(h.reason, "unreachable");
  ASSERT_TRUE(redis_.restart());
  // No traffic needed: the store reconnects by itself.
  for (int i = 0; i < 300 && !store_->health().writable; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(store_->health().writable);
  ASSERT_GE(wait_until_written(5000), 0);
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));  // appendfsync always: the ack of 1 held
}

TEST_F(ValkeyFaultTest, HungNodeTimesOutAsUnavailableAndServiceResumesAfterIt) {
  ASSERT_TRUE(append_sync(*store_, make_req(lobby_, make_msg(1, now_))));
  redis_.pause();
  const int64_t t0 = wall_ms();
  Status st = append_sync(*store_, make_req(lobby_, make_msg(2, now_)));
  const int64_t waited = wall_ms() - t0;
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_GE(waited, 250);   // command_timeout_ms 300, checked every 75 ms
  EXPECT_LT(waited, 1500);
  EXPECT_FALSE(store_->health().writable);
  redis_.resume();
  ASSERT_GE(wait_until_written(5000), 0);
  // The timed-out append may or may not have run once the node resumed; either
  // way the seqs are contiguous and nothing was written twice.
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, stored->size()));
  EXPECT_GE(stored->size(), 2u);
}

}  // namespace
}  // namespace parley::store::valkey
