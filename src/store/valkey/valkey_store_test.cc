// The valkey store beyond the shared conformance suite: what only a shared store
// does (assigning seqs, answering duplicates), where its keys live, and how it
// behaves when Valkey hangs, crashes and comes back.
#include "store/valkey/valkey_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/clock.h"
#include "store/store_test_util.h"
#include "store/valkey/partition_map.h"
#include "support/redis_server.h"

namespace parley::store::valkey {
namespace {

using store::testing::append_sync;
using store::testing::make_msg;
using store::testing::make_req;
using store::testing::read_after_sync;
using store::testing::recover_sync;
using store::testing::seqs_of;
using store::testing::seq_range;
using store::testing::TempDir;

AppendOutcome append_outcome(Store& s, AppendRequest req) {
  std::promise<AppendOutcome> p;
  auto f = p.get_future();
  s.append(std::move(req), [&p](AppendOutcome o) { p.set_value(std::move(o)); });
  return f.get();
}

std::unique_ptr<ValkeyStore> open_on(const std::vector<std::string>& nodes, bool cluster = false,
                                     uint32_t timeout_ms = 2000) {
  ValkeyOptions o;
  o.nodes = nodes;
  o.cluster = cluster;
  o.command_timeout_ms = timeout_ms;
  auto r = ValkeyStore::open(store::testing::test_loops(), o);
  return r ? std::move(*r) : nullptr;
}

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
    ASSERT_TRUE(out.status);
    EXPECT_EQ(out.seq, s);
    EXPECT_FALSE(out.dup);
  }
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 5));
}

TEST_F(ValkeyStoreTest, DuplicateWithinTheWindowAnswersTheOriginalSeqAndWritesNothing) {
  ASSERT_TRUE(append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "x"))).status);
  ASSERT_TRUE(append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u2", "x"))).status);
  auto again = append_outcome(*store_, make_req(lobby_, make_msg(0, now_ + 5, "u1", "x", R"("other")")));
  ASSERT_TRUE(again.status);
  EXPECT_EQ(again.seq, 1u);
  EXPECT_TRUE(again.dup);
  auto stored = read_after_sync(*store_, lobby_, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  // Past the window (120 s) the id is new again.
  auto later = append_outcome(*store_, make_req(lobby_, make_msg(0, now_ + 121'000, "u1", "x")));
  ASSERT_TRUE(later.status);
  EXPECT_EQ(later.seq, 3u);
  EXPECT_FALSE(later.dup);
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
  EXPECT_EQ(n, 5u);  // seq, history, dedupe hash and zset, WAL
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

// Moves the slot of `tag` to another master the way redis-cli --cluster reshard
// does: IMPORTING / MIGRATING, MIGRATE of its keys, then (if `finish`) SETSLOT NODE
// on every master. Returns the index of the new master.
size_t move_slot(parley::testing::RedisCluster& cluster, const std::string& tag, bool finish) {
  const std::string slot = std::to_string(key_slot(tag));
  size_t from = 0;
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).command({"CLUSTER", "COUNTKEYSINSLOT", slot}) != "0") from = i;
  }
  const size_t to = (from + 1) % cluster.size();
  auto& src = cluster.node(from);
  auto& dst = cluster.node(to);
  const std::string src_id = src.command({"CLUSTER", "MYID"});
  const std::string dst_id = dst.command({"CLUSTER", "MYID"});
  EXPECT_EQ(dst.command({"CLUSTER", "SETSLOT", slot, "IMPORTING", src_id}), "OK");
  EXPECT_EQ(src.command({"CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id}), "OK");
  const std::string keys = src.command({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
  std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", std::to_string(dst.port()), "", "0", "5000", "KEYS"};
  for (size_t p = 0; p < keys.size();) {
    const size_t nl = keys.find('\n', p);
    migrate.push_back(keys.substr(p, nl == std::string::npos ? std::string::npos : nl - p));
    p = nl == std::string::npos ? keys.size() : nl + 1;
  }
  EXPECT_EQ(src.command(migrate), "OK");
  if (finish) {
    for (size_t i = 0; i < cluster.size(); ++i) {
      EXPECT_EQ(cluster.node(i).command({"CLUSTER", "SETSLOT", slot, "NODE", dst_id}), "OK");
    }
  }
  return to;
}

TEST_F(ValkeyClusterTest, SlotMovedToAnotherMasterIsFollowedAfterOneRetryableFailure) {
  const ChannelKey key{"demo", "moving"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  auto& dst = cluster().node(move_slot(cluster(), k.tag, true));
  // The store still sends the slot to its old master: MOVED, a retryable failure
  // that nothing wrote; the retry goes to the new master.
  Status st = append_sync(*store_, make_req(key, make_msg(2, now_)));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable) << st.error().msg;
  EXPECT_NE(st.error().msg.find("MOVED"), std::string::npos) << st.error().msg;
  st = append_sync(*store_, make_req(key, make_msg(2, now_)));
  ASSERT_TRUE(st) << st.error().msg;
  auto stored = read_after_sync(*store_, key, 0, 10);
  ASSERT_TRUE(stored);
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  EXPECT_EQ(dst.command({"GET", k.seq}), "2");
}

TEST_F(ValkeyClusterTest, SlotBeingMigratedIsReachedThroughAskWithoutAFailure) {
  const ChannelKey key{"demo", "migrating"};
  const ChannelKeys k = channel_keys(key, 64);
  ASSERT_TRUE(append_sync(*store_, make_req(key, make_msg(1, now_))));
  const size_t to = move_slot(cluster(), k.tag, false);
  // The keys are on the importing node, the slot still on the old one: ASK.
  Status st = append_sync(*store_, make_req(key, make_msg(2, now_)));
  ASSERT_TRUE(st) << st.error().msg;
  auto stored = read_after_sync(*store_, key, 0, 10);
  ASSERT_TRUE(stored) << stored.error().msg;
  EXPECT_EQ(seqs_of(*stored), seq_range(1, 2));
  const std::string dst_id = cluster().node(to).command({"CLUSTER", "MYID"});
  for (size_t i = 0; i < cluster().size(); ++i) {
    EXPECT_EQ(cluster().node(i).command({"CLUSTER", "SETSLOT", std::to_string(key_slot(k.tag)), "NODE", dst_id}), "OK");
  }
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
