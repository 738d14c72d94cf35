// SequencedLog, the one sequencer of channels (hub::Shard) and topic partitions
// (events::Partition), tested once for both: on a real loop, with a ManualStore
// whose calls the test answers when it chooses (recoveries, gap fills). Each
// test drives the log as its owners do (append, the store's answer posted back
// to the loop, complete) and checks what the owner is told to deliver and
// answer: both numbering strategies, failures, restarts, duplicates in flight.
#include "seqlog/sequenced_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/loop_group.h"
#include "runtime/run_and_wait.h"
#include "store/manual_store.h"

namespace parley::seqlog {
namespace {

using namespace std::chrono_literals;
using store::Appended;
using store::AppendOutcome;
using store::StoredMessage;
using store::testing::ManualStore;
using store::testing::StoreCall;

// What an owner keeps per append, how it answers a duplicate, what it delivers.
struct Pending {
  std::string what;
};
struct Waiter {
  std::string who;
};
using Log = SequencedLog<Pending, Waiter, StoredMessage>;
using Completion = Log::Completion;

constexpr int64_t kWindowMs = 60'000;
constexpr int64_t kNow = 1'000'000;

store::DedupeKey key(const std::string& id) { return store::DedupeKey("u", id); }

StoredMessage msg(uint64_t seq, std::string id = {}) {
  return StoredMessage{seq, kNow, "u", id.empty() ? "m" + std::to_string(seq) : id, "{}"};
}

store::ChannelRecovery recovery(uint64_t last, std::vector<store::DedupeEntry> dedupe = {}) {
  store::ChannelRecovery r;
  r.last_seq = last;
  r.dedupe = std::move(dedupe);
  return r;
}

const Error kDiskGone{ErrorCode::kUnavailable, "disk gone", 1000};

// ---- The server numbers the log (memory, embedded store) ----------------------

// A log the server numbers, recovered at `last` (one that starts anew).
void recover(Log& log, uint64_t last, std::vector<store::DedupeEntry> dedupe = {}) {
  log.begin_recovery();
  auto rec = recovery(last, std::move(dedupe));
  log.recovered(rec);
}

TEST(SequencedLogServer, IsNotReadyUntilRecoveredAndGoesOnFromTheStoresLastSeq) {
  Log log(false, kWindowMs);
  EXPECT_FALSE(log.ready());
  EXPECT_TRUE(log.needs_recovery());
  log.begin_recovery();
  EXPECT_FALSE(log.ready());
  EXPECT_FALSE(log.needs_recovery()) << "a second recovery while one runs";
  auto rec = recovery(7);
  EXPECT_EQ(log.recovered(rec), 7u);
  EXPECT_TRUE(log.ready());
  EXPECT_EQ(log.committed(), 7u);
  EXPECT_EQ(log.next_seq(), 8u);
  EXPECT_EQ(log.append({}, kNow, Pending{"a"}), 8u);
  EXPECT_EQ(log.append({}, kNow, Pending{"b"}), 9u);
  EXPECT_EQ(log.inflight(), 2u);
  EXPECT_EQ(log.newest()->what, "b");
}

TEST(SequencedLogServer, CommitsInOrderAndAnswersEachWithItsSeq) {
  Log log(false, kWindowMs);
  recover(log, 0);
  log.append(key("a"), kNow, Pending{"a"});
  log.append(key("b"), kNow, Pending{"b"});
  Completion first = log.complete(Appended{1});
  EXPECT_EQ(first.kind, Completion::kCommitted);
  EXPECT_EQ(first.pending.what, "a");
  ASSERT_TRUE(first.outcome);
  EXPECT_EQ(first.outcome->seq, 1u);
  EXPECT_FALSE(first.outcome->dup);
  EXPECT_EQ(log.committed(), 1u);
  Completion second = log.complete(Appended{2});
  EXPECT_EQ(second.kind, Completion::kCommitted);
  EXPECT_EQ(second.outcome->seq, 2u);
  EXPECT_EQ(log.committed(), 2u);
  EXPECT_EQ(log.inflight(), 0u);
}

TEST(SequencedLogServer, ADuplicateOfACommittedAppendIsAnsweredWithTheOriginalSeq) {
  Log log(false, kWindowMs);
  recover(log, 4);
  log.append(key("x"), kNow, Pending{"x"});
  log.complete(Appended{5});
  uint64_t seq = 0;
  EXPECT_EQ(log.seen(key("x"), seq, [] { return Waiter{"never"}; }), Log::Seen::kDuplicate);
  EXPECT_EQ(seq, 5u);
  EXPECT_EQ(log.seen(key("y"), seq, [] { return Waiter{"never"}; }), Log::Seen::kNew);
  EXPECT_EQ(log.next_seq(), 6u) << "a duplicate takes no seq";
}

TEST(SequencedLogServer, ADuplicateInFlightWaitsForItsOriginalAndIsAnsweredAsADup) {
  Log log(false, kWindowMs);
  recover(log, 0);
  log.append(key("x"), kNow, Pending{"x"});
  log.append(key("y"), kNow, Pending{"y"});
  uint64_t seq = 0;
  EXPECT_EQ(log.seen(key("y"), seq, [] { return Waiter{"retry-1"}; }), Log::Seen::kWaits);
  EXPECT_EQ(seq, 2u);
  EXPECT_EQ(log.seen(key("y"), seq, [] { return Waiter{"retry-2"}; }), Log::Seen::kWaits);
  Completion x = log.complete(Appended{1});
  EXPECT_TRUE(x.waiters.empty()) << "the waiters are y's";
  Completion y = log.complete(Appended{2});
  EXPECT_EQ(y.kind, Completion::kCommitted);
  ASSERT_EQ(y.waiters.size(), 2u);
  EXPECT_EQ(y.waiters[0].who, "retry-1");
  EXPECT_EQ(y.waiters[1].who, "retry-2");
  const AppendOutcome again = y.for_waiters();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->seq, 2u);
  EXPECT_TRUE(again->dup);
  EXPECT_EQ(log.seen(key("y"), seq, [] { return Waiter{"never"}; }), Log::Seen::kDuplicate);
}

TEST(SequencedLogServer, AFailureFailsTheLogAndEveryAppendBehindItAndLeavesNoGap) {
  Log log(false, kWindowMs);
  recover(log, 10);
  log.append(key("a"), kNow, Pending{"a"});  // 11
  log.append(key("b"), kNow, Pending{"b"});  // 12
  uint64_t seq = 0;
  EXPECT_EQ(log.seen(key("a"), seq, [] { return Waiter{"retry-a"}; }), Log::Seen::kWaits);
  Completion a = log.complete(kDiskGone);
  EXPECT_EQ(a.kind, Completion::kAnswered);
  ASSERT_FALSE(a.outcome);
  EXPECT_EQ(a.outcome.error().msg, "disk gone");
  ASSERT_EQ(a.waiters.size(), 1u);
  EXPECT_FALSE(a.for_waiters()) << "a duplicate of a failed append fails too";
  EXPECT_FALSE(log.ready());
  EXPECT_FALSE(log.needs_recovery()) << "12 is still in flight";
  // The store promised to refuse it; a success after a failure is a failure too,
  // or 12 would be delivered after a gap at 11.
  Completion b = log.complete(Appended{12});
  EXPECT_EQ(b.kind, Completion::kAnswered);
  ASSERT_FALSE(b.outcome);
  EXPECT_EQ(b.outcome.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(log.committed(), 10u);
  EXPECT_TRUE(log.needs_recovery());
  EXPECT_EQ(log.seen(key("a"), seq, [] { return Waiter{"never"}; }), Log::Seen::kNew)
      << "a failed id may be sent again";
}

TEST(SequencedLogServer, ARecoveryAfterAFailureGoesOnFromTheStoreNeverBelowWhatWasCommitted) {
  Log log(false, kWindowMs);
  recover(log, 4);
  log.append({}, kNow, Pending{"5"});
  log.complete(Appended{5});
  log.append({}, kNow, Pending{"6"});
  log.complete(kDiskGone);
  ASSERT_TRUE(log.needs_recovery());
  log.begin_recovery();
  auto behind = recovery(3);  // a store that lost what it acknowledged
  EXPECT_EQ(log.recovered(behind), 5u);
  EXPECT_EQ(log.next_seq(), 6u) << "seq 5 may have been acknowledged: never handed out again";

  log.append({}, kNow, Pending{"6"});
  log.complete(kDiskGone);
  log.begin_recovery();
  auto ahead = recovery(9);  // a floor raised by a start that accepted data loss
  EXPECT_EQ(log.recovered(ahead), 9u);
  EXPECT_EQ(log.next_seq(), 10u);
}

TEST(SequencedLogServer, AFailedRecoveryLeavesTheLogToBeRecoveredAgain) {
  Log log(false, kWindowMs);
  log.begin_recovery();
  log.recovery_failed();
  EXPECT_FALSE(log.ready());
  EXPECT_TRUE(log.needs_recovery());
  log.begin_recovery();
  auto rec = recovery(2);
  log.recovered(rec);
  EXPECT_TRUE(log.ready());
  EXPECT_EQ(log.next_seq(), 3u);
}

TEST(SequencedLogServer, ARestartRebuildsTheWindowFromTheStoreOldestFirst) {
  // Out of time order, as a store may list them: the old id must still expire
  // first, which it does only if it went into the oldest time bucket.
  const int64_t old_ts = kNow - kWindowMs + 1000;
  const int64_t new_ts = kNow;
  Log log(false, kWindowMs);
  recover(log, 9, {{"u", "new", 9, new_ts}, {"u", "old", 3, old_ts}});
  uint64_t seq = 0;
  EXPECT_EQ(log.seen(key("new"), seq, [] { return Waiter{}; }), Log::Seen::kDuplicate);
  EXPECT_EQ(seq, 9u);
  EXPECT_EQ(log.seen(key("old"), seq, [] { return Waiter{}; }), Log::Seen::kDuplicate);
  EXPECT_EQ(seq, 3u);
  log.expire(old_ts + kWindowMs + 30'000);  // past the old id's window, inside the new one's
  EXPECT_EQ(log.seen(key("old"), seq, [] { return Waiter{}; }), Log::Seen::kNew);
  EXPECT_EQ(log.seen(key("new"), seq, [] { return Waiter{}; }), Log::Seen::kDuplicate);
}

TEST(SequencedLogServer, IdsInFlightOutliveTheirWindow) {
  Log log(false, kWindowMs);
  recover(log, 0);
  log.append(key("slow"), kNow, Pending{"slow"});
  log.expire(kNow + 10 * kWindowMs);
  uint64_t seq = 0;
  EXPECT_EQ(log.seen(key("slow"), seq, [] { return Waiter{"retry"}; }), Log::Seen::kWaits);
  Completion c = log.complete(Appended{1});
  EXPECT_EQ(c.waiters.size(), 1u);
}

// ---- The store numbers the log (valkey, several nodes), on a real loop --------

class SequencedLogStore : public ::testing::Test {
 protected:
  SequencedLogStore() : loops_(1) { loops_.start(); }
  ~SequencedLogStore() override {
    on_loop([&] { log_.reset(); });
    loops_.stop();
  }

  template <typename Fn>
  void on_loop(Fn fn) {
    ASSERT_TRUE(runtime::run_and_wait(loops_, 0, fn));
  }

  // A log the store numbers, recovered at `last` (on the loop).
  void make(uint64_t last, std::chrono::milliseconds gap = 20ms) {
    on_loop([&] {
      log_ = std::make_unique<Log>(true, kWindowMs);
      Log::FollowHooks hooks;
      hooks.release = [this](uint64_t seq, StoredMessage& m, bool next) {
        EXPECT_EQ(m.seq, seq);
        (next ? delivered_ : late_).push_back(m.id);
      };
      hooks.from_store = [](StoredMessage& m) { return std::move(m); };
      hooks.passed_over = [this](uint64_t from, uint64_t to) { passed_.emplace_back(from, to); };
      hooks.ahead = [this] { ++ahead_; };
      hooks.merge = [this](StoredMessage& held, StoredMessage& mine) {
        merged_.push_back(held.id + "+" + mine.id);
      };
      log_->follow(loops_, 0, store_, store::ChannelId{"t", "c"},
                   Options{gap, 4096, 512}, std::move(hooks));
      log_->begin_recovery();
      auto r = recovery(last);
      log_->recovered(r);
    });
  }
  // Waits (bounded) for `n` deliveries and returns them.
  std::vector<std::string> delivered(size_t n) {
    std::vector<std::string> out;
    for (int i = 0; i < 400; ++i) {
      on_loop([&] { out = delivered_; });
      if (out.size() >= n) break;
      std::this_thread::sleep_for(5ms);
    }
    return out;
  }

  runtime::LoopGroup loops_;
  ManualStore store_;
  std::unique_ptr<Log> log_;
  std::vector<std::string> delivered_, late_, merged_;
  std::vector<std::pair<uint64_t, uint64_t>> passed_;
  int ahead_ = 0;
};

TEST_F(SequencedLogStore, AppendsGoUnnumberedAndTheStoresAnswersAreMergedWithTheFeedInSeqOrder) {
  make(10);
  on_loop([&] {
    EXPECT_EQ(log_->append(key("mine"), kNow, Pending{"mine"}), 0u) << "the store numbers it";
    Completion c = log_->complete(Appended{12});
    EXPECT_EQ(c.kind, Completion::kAssigned);
    EXPECT_EQ(c.outcome->seq, 12u);
    log_->take(12, msg(12, "mine"));
    EXPECT_TRUE(delivered_.empty()) << "11 (another node's) is not here yet";
    EXPECT_EQ(ahead_, 1);
    auto other = msg(11, "theirs");
    log_->on_feed(other);
    EXPECT_EQ(delivered_, (std::vector<std::string>{"theirs", "mine"}));
    EXPECT_EQ(log_->committed(), 12u);
    EXPECT_EQ(log_->last(), 12u);
    auto again = msg(12, "mine-pushed");
    log_->on_feed(again);  // the push of this node's own append: not news
    EXPECT_EQ(delivered_.size(), 2u);
    EXPECT_TRUE(log_->idle());
  });
}

TEST_F(SequencedLogStore, AnOwnAnswerForAHeldPushAddsToItAndOneForADeliveredSeqIsLate) {
  make(0);
  on_loop([&] {
    auto pushed = msg(2, "pushed-2");
    log_->on_feed(pushed);  // held behind 1
    log_->append({}, kNow, Pending{"2"});
    log_->complete(Appended{2});
    log_->take(2, msg(2, "own-2"));
    EXPECT_EQ(merged_, (std::vector<std::string>{"pushed-2+own-2"}));
    auto one = msg(1, "pushed-1");
    log_->on_feed(one);
    EXPECT_EQ(delivered_, (std::vector<std::string>{"pushed-1", "pushed-2"}));
    // Its push came first and was delivered: only what rides with it is left.
    log_->append({}, kNow, Pending{"1"});
    log_->complete(Appended{1});
    log_->take(1, msg(1, "own-1"));
    EXPECT_EQ(late_, (std::vector<std::string>{"own-1"}));
    EXPECT_EQ(delivered_.size(), 2u);
  });
}

TEST_F(SequencedLogStore, AFailureOrADuplicateIsOnlyAnsweredAndMarksNothing) {
  make(5);
  on_loop([&] {
    log_->append({}, kNow, Pending{"lost"});
    log_->append({}, kNow, Pending{"again"});
    Completion lost = log_->complete(kDiskGone);
    EXPECT_EQ(lost.kind, Completion::kAnswered);
    EXPECT_FALSE(lost.outcome);
    EXPECT_TRUE(log_->ready()) << "the store assigned no seq, or the feed brings it";
    Completion dup = log_->complete(Appended{3, true});
    EXPECT_EQ(dup.kind, Completion::kAnswered);
    EXPECT_EQ(dup.pending.what, "again");
    EXPECT_TRUE(dup.outcome->dup);
    EXPECT_EQ(dup.outcome->seq, 3u);
    EXPECT_TRUE(delivered_.empty());
    EXPECT_EQ(log_->last(), 5u) << "a duplicate's seq is old";
  });
}

TEST_F(SequencedLogStore, AGapOpenLongerThanTheOptionIsReadFromTheStore) {
  make(1, 20ms);
  const auto start = std::chrono::steady_clock::now();
  on_loop([&] {
    auto three = msg(3);
    log_->on_feed(three);
  });
  auto fill = store_.next(StoreCall::kReadAfter);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms) << "read before the gap timeout";
  EXPECT_EQ(fill.bound, 1u);
  EXPECT_EQ(fill.limit, 512u);
  fill.read_done(std::vector<StoredMessage>{msg(2), msg(3)});
  EXPECT_EQ(delivered(2), (std::vector<std::string>{"m2", "m3"}));
  on_loop([&] { EXPECT_TRUE(passed_.empty()); });
}

TEST_F(SequencedLogStore, WhatTheFeedBringsDuringARecoveryGoesOutAfterTheRecoveredSeq) {
  on_loop([&] {
    log_ = std::make_unique<Log>(true, kWindowMs);
    Log::FollowHooks hooks;
    hooks.release = [this](uint64_t, StoredMessage& m, bool next) {
      (next ? delivered_ : late_).push_back(m.id);
    };
    hooks.from_store = [](StoredMessage& m) { return std::move(m); };
    hooks.passed_over = [](uint64_t, uint64_t) {};
    log_->follow(loops_, 0, store_, store::ChannelId{"t", "c"}, Options{20ms, 4096, 512},
                 std::move(hooks));
    // Before the first recovery too (the feed is watched from creation).
    for (uint64_t s : {4, 5, 6}) {
      auto m = msg(s);
      log_->on_feed(m);
    }
    EXPECT_TRUE(delivered_.empty()) << "released before the counter was known";
    log_->begin_recovery();
    auto rec = recovery(4);
    EXPECT_EQ(log_->recovered(rec), 4u);
    EXPECT_EQ(delivered_, (std::vector<std::string>{"m5", "m6"}));
    EXPECT_EQ(log_->committed(), 6u);
  });
  EXPECT_TRUE(store_.quiet_for(60ms)) << "no gap, so no fill";
}

}  // namespace
}  // namespace parley::seqlog
