// The broker over a valkey store's partition feeds (valkey_broker.h) against
// a real redis-server: what a node hears of another's commits, and what the
// channels it follows tell the store's appends.
#include "cluster/valkey_broker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "store/store_test_util.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/scripts.h"
#include "store/valkey/valkey_test_util.h"
#include "support/redis_server.h"

namespace parley::cluster {
namespace {

using store::AppendOutcome;
using store::AppendRequest;
using store::ChannelId;
using store::ChannelKey;
using store::StoredMessage;
using store::testing::append_outcome;
using store::testing::make_msg;
using store::testing::make_req;
using store::testing::read_after_sync;
using store::testing::recover_sync;
using store::valkey::ChannelKeys;
using store::valkey::ValkeyStore;
using store::valkey::channel_keys;
using store::valkey::kLossJump;
using store::valkey::testing::open_on;

// Hands what the broker says of a channel to the test's functions (on the
// subscribers' loops).
struct Listener final : FeedListener {
  std::function<void(StoredMessage)> message;
  std::function<void()> resync;
  std::function<void(const ChannelId&, std::string)> note;
  void on_message(const ChannelId&, StoredMessage m) override {
    if (message) message(std::move(m));
  }
  void on_resync(const ChannelId&) override {
    if (resync) resync();
  }
  void on_note(const ChannelId& id, std::string n) override {
    if (note) note(id, std::move(n));
  }
};

// Two nodes' stores on one fresh redis-server.
class ValkeyBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& redis = parley::testing::shared_redis();
    ASSERT_TRUE(redis.ok()) << redis.why();
    ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
    for (auto* s : {&store_, &other_}) {
      *s = open_on({redis.address()});
      ASSERT_NE(*s, nullptr);
    }
  }
  const int64_t now_ = wall_ms();
  const ChannelKey lobby_{"demo", "chat:lobby"};
  std::unique_ptr<ValkeyStore> store_, other_;
};

// A replica promoted before it had the last commits (asynchronous replication)
// answers with a counter below what the nodes saw: the next append jumps past
// every seq that may have been acknowledged, and the channel's epoch goes up in
// the store, in the answer, in the history entry, in the push and in a load.
TEST_F(ValkeyBrokerTest, ACounterBehindWhatThisNodeSawJumpsPastItAndRaisesTheEpochEverywhere) {
  auto& redis = parley::testing::shared_redis();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<StoredMessage> pushed;
  bool subscribed = false;
  Listener feed;
  feed.message = [&](StoredMessage m) {
    std::lock_guard lock(mu);
    pushed.push_back(std::move(m));
    cv.notify_all();
  };
  feed.resync = [&] {
    std::lock_guard lock(mu);
    subscribed = true;
    cv.notify_all();
  };
  Listener quiet;
  ValkeyBroker other_broker(*other_);
  ValkeyBroker broker(*store_);
  other_broker.watch(lobby_, feed);
  broker.watch(lobby_, quiet);  // this node follows the channel: it knows what it saw
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return subscribed; }));
  }
  for (uint64_t s = 1; s <= 5; ++s) {
    auto out = append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "a" + std::to_string(s))));
    ASSERT_TRUE(out.status());
    EXPECT_EQ(out->epoch, 1u);
  }
  // What the promoted replica holds: seqs 1 and 2 only.
  const ChannelKeys k = channel_keys(lobby_, 64);
  ASSERT_EQ(redis.command({"SET", k.seq, "2"}), "OK");
  ASSERT_EQ(redis.command({"XDEL", k.history, "3-0", "4-0", "5-0"}), "3");
  auto out = append_outcome(*store_, make_req(lobby_, make_msg(0, now_, "u1", "b1")));
  ASSERT_TRUE(out.status());
  const uint64_t jumped = 5 + kLossJump + 1;
  EXPECT_EQ(out->seq, jumped);
  EXPECT_EQ(out->epoch, 2u);
  EXPECT_EQ(redis.command({"GET", k.epoch}), "2");
  auto stored = read_after_sync(*store_, lobby_, 2, 10);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ(stored->front().seq, jumped);
  EXPECT_EQ(stored->front().epoch, 2u);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] {
      return !pushed.empty() && pushed.back().seq == jumped;
    }));
    EXPECT_EQ(pushed.back().epoch, 2u);
    EXPECT_EQ(pushed.front().epoch, 0u);  // before the loss: not said (1)
  }
  auto rec = recover_sync(*other_, lobby_, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, jumped);
  EXPECT_EQ(rec->epoch, 2u);
  // The other node saw only what the store still holds: no second jump.
  auto next = append_outcome(*other_, make_req(lobby_, make_msg(0, now_, "u2", "b2")));
  ASSERT_TRUE(next.status());
  EXPECT_EQ(next->seq, jumped + 1);
  EXPECT_EQ(next->epoch, 2u);
  other_broker.unwatch(lobby_);
  broker.unwatch(lobby_);
}

// A note one node publishes reaches the node watching the channel, and there
// only that channel's listener, not another's of the same partition feed;
// once it unwatches, nothing more arrives.
TEST_F(ValkeyBrokerTest, ANoteReachesTheWatchingNodeOnlyWhileItWatches) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<ChannelId, std::string>> notes;
  size_t misdelivered = 0;  // heard by the listener of another channel
  bool subscribed = false;
  Listener lobby, elsewhere;
  lobby.resync = [&] {
    std::lock_guard lock(mu);
    subscribed = true;
    cv.notify_all();
  };
  lobby.note = [&](const ChannelId& id, std::string n) {
    std::lock_guard lock(mu);
    notes.emplace_back(id, std::move(n));
    cv.notify_all();
  };
  elsewhere.note = [&](const ChannelId&, std::string) {
    std::lock_guard lock(mu);
    ++misdelivered;
  };
  ValkeyBroker publisher(*store_);
  ValkeyBroker watcher(*other_);
  // A channel of the same partition: its feed carries the lobby's notes too.
  ChannelId hall{"demo", "chat:hall"};
  for (int i = 0; store::valkey::partition_of(hall, 64) != store::valkey::partition_of(lobby_, 64); ++i) {
    hall.channel = "chat:hall" + std::to_string(i);
  }
  watcher.watch(lobby_, lobby);
  watcher.watch(hall, elsewhere);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return subscribed; }));
  }
  publisher.publish_note(lobby_, "j node-a bob");
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return !notes.empty(); }));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].first, lobby_);
    EXPECT_EQ(notes[0].second, "j node-a bob");
  }
  watcher.unwatch(lobby_);
  watcher.unwatch(hall);
  // Unwatched: the listeners hear nothing more (300 ms, many times what the
  // first note took to arrive).
  publisher.publish_note(lobby_, "l node-a bob");
  publisher.publish_note(hall, "l node-a bob");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::lock_guard lock(mu);
  EXPECT_EQ(notes.size(), 1u);
  EXPECT_EQ(misdelivered, 0u);
}

}  // namespace
}  // namespace parley::cluster
