// LogFollower against a real MemoryStore on a running loop: entries that reach
// it out of order leave in seq order, a gap is read back from the store after
// `gap`, seqs the store no longer holds are passed over, nothing leaves while
// paused, and an owner may go with a fill in flight.
#include "store/log_follower.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "store/memory_store.h"
#include "store/store_test_util.h"

namespace parley::store {
namespace {

using testing::make_msg;
using testing::make_req;
using testing::test_loops;

using Follower = LogFollower<StoredMessage>;

// Runs fn on loop 0 and waits for it.
template <typename Fn>
void on_loop(Fn&& fn) {
  std::promise<void> done;
  test_loops().run_on(0, [&] {
    fn();
    done.set_value();
  });
  done.get_future().get();
}

struct Owner {
  explicit Owner(Store& store, ChannelKey key = {"t", "c"}) {
    Follower::Hooks hooks;
    hooks.release = [this](uint64_t seq, StoredMessage& m, bool next) {
      if (next) delivered.push_back(seq);
      EXPECT_EQ(m.seq, seq);
    };
    hooks.from_store = [](StoredMessage& m) { return std::move(m); };
    hooks.passed_over = [this](uint64_t from, uint64_t to) { passed.emplace_back(from, to); };
    hooks.on_fill = [this] { ++fills; };
    follower = std::make_unique<Follower>(test_loops(), 0, store, std::move(key), committed,
                                          Follower::Limits{std::chrono::milliseconds(5), 8, 4},
                                          std::move(hooks));
  }
  void offer(uint64_t seq) {
    if (follower->wants(seq)) follower->hold(seq, make_msg(seq, 1000));
  }
  // Reads the owner's state on its loop.
  std::vector<uint64_t> seen() {
    std::vector<uint64_t> out;
    on_loop([&] { out = delivered; });
    return out;
  }

  uint64_t committed = 0;
  std::vector<uint64_t> delivered;
  std::vector<std::pair<uint64_t, uint64_t>> passed;
  int fills = 0;
  std::unique_ptr<Follower> follower;
};

void append(MemoryStore& store, const ChannelKey& key, uint64_t seq) {
  store.append(make_req(key, make_msg(seq, 1000)), [](AppendOutcome o) { ASSERT_TRUE(o.status()); });
}

// Waits (bounded) until the owner delivered `n` entries.
std::vector<uint64_t> wait_for(Owner& o, size_t n) {
  for (int i = 0; i < 400; ++i) {
    auto seen = o.seen();
    if (seen.size() >= n) return seen;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return o.seen();
}

TEST(LogFollower, ReleasesInSeqOrderWhateverTheArrivalOrder) {
  MemoryStore store;
  Owner o(store);
  on_loop([&] {
    o.offer(3);
    o.offer(2);
    EXPECT_TRUE(o.delivered.empty());
    o.offer(2);  // twice: not news
    EXPECT_FALSE(o.follower->wants(2));
    o.offer(1);
    EXPECT_EQ(o.delivered, (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_EQ(o.committed, 3u);
    EXPECT_FALSE(o.follower->wants(3));
    EXPECT_TRUE(o.follower->idle());
  });
}

TEST(LogFollower, ReadsAGapBackFromTheStore) {
  MemoryStore store;
  const ChannelKey key{"t", "gap"};
  for (uint64_t s = 1; s <= 6; ++s) append(store, key, s);
  Owner o(store, key);
  on_loop([&] { o.offer(6); });  // 1..5 never pushed
  EXPECT_EQ(wait_for(o, 6), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  on_loop([&] {
    EXPECT_GE(o.fills, 2);  // pages of 4: 1..4, then 5..6
    EXPECT_TRUE(o.passed.empty());
  });
}

TEST(LogFollower, PassesOverWhatTheStoreTrimmed) {
  MemoryStore store;
  const ChannelKey key{"t", "trim"};
  for (uint64_t s = 4; s <= 5; ++s) append(store, key, s);  // 1..3 trimmed away
  Owner o(store, key);
  on_loop([&] { o.offer(5); });
  EXPECT_EQ(wait_for(o, 2), (std::vector<uint64_t>{4, 5}));
  on_loop([&] { EXPECT_EQ(o.passed, (std::vector<std::pair<uint64_t, uint64_t>>{{1, 3}})); });
}

TEST(LogFollower, PassesOverWhatThreeFillsDidNotFind) {
  MemoryStore store;  // holds nothing of this channel
  Owner o(store, {"t", "lost"});
  on_loop([&] { o.offer(3); });
  EXPECT_EQ(wait_for(o, 1), (std::vector<uint64_t>{3}));
  on_loop([&] {
    EXPECT_EQ(o.fills, 3);
    EXPECT_EQ(o.passed, (std::vector<std::pair<uint64_t, uint64_t>>{{1, 2}}));
  });
}

TEST(LogFollower, HoldsWhilePausedAndGoesOnFromTheRecoveredSeq) {
  MemoryStore store;
  Owner o(store, {"t", "paused"});
  on_loop([&] {
    o.follower->pause();
    o.offer(11);
    o.offer(12);
    o.offer(1);
    EXPECT_TRUE(o.delivered.empty());
    o.committed = 10;  // what the recovery read
    o.follower->resume();
    // 1 is at or below the recovered seq: passed, not delivered.
    EXPECT_EQ(o.delivered, (std::vector<uint64_t>{11, 12}));
  });
}

TEST(LogFollower, LeavesFarEntriesToTheFillAndKeepsOwnAnswers) {
  MemoryStore store;
  const ChannelKey key{"t", "far"};
  for (uint64_t s = 1; s <= 20; ++s) append(store, key, s);
  Owner o(store, key);
  on_loop([&] {
    EXPECT_FALSE(o.follower->hold(20, make_msg(20, 1000)));  // max_ahead 8
    o.follower->keep(19, make_msg(19, 1000));                 // held however far
  });
  const auto seen = wait_for(o, 20);
  ASSERT_EQ(seen.size(), 20u);
  for (uint64_t s = 1; s <= 20; ++s) EXPECT_EQ(seen[s - 1], s);
}

TEST(LogFollower, AnOwnerMayGoWithAFillInFlight) {
  MemoryStore store;
  auto o = std::make_unique<Owner>(store, ChannelKey{"t", "gone"});
  on_loop([&] {
    o->offer(5);
    o->follower->fill();
    o.reset();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the fill's answer and timers run out
  on_loop([] {});
}

}  // namespace
}  // namespace parley::store
