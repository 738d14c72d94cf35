// A topic partition's dedupe window (partition.h, store/dedupe_index.h) over a
// real loop and a real store, no server: a retry is answered with its
// original offset after one read of the event there; a fingerprint shared by two
// ids never drops the second; appends behind a confirmation keep their order; a
// duplicate of an append in flight waits for it without a read; a restart
// rebuilds the window from the store; a failed read is an error, not a guess.
// On the segment log (the embedded store's topic log), with a read that does not
// answer: the appends held behind it are bounded (backpressure), a read past its
// deadline answers them unavailable in their order, and a restart after one is clean.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "events/topic.h"
#include "events/topic_channel.h"
#include "runtime/run_and_wait.h"
#include "store/memory_store.h"
#include "store/store_test_util.h"

namespace parley::events {
namespace {

using namespace std::chrono_literals;

// A real store (the MemoryStore, or the embedded store with its segment log),
// counting the partition's reads (a confirmation is one), failing them on
// demand, or holding them unanswered (a store that hangs) until released.
class ReadCountingStore final : public store::Store {
 public:
  explicit ReadCountingStore(std::unique_ptr<store::Store> inner) : inner_(std::move(inner)) {}
  void recover(const store::ChannelKey& key, int64_t cutoff, store::RecoverDone done) override {
    inner_->recover(key, cutoff, std::move(done));
  }
  // The partition's recovery: what the inner store does with a hash (the segment
  // log hashes while it reads), counted.
  void recover_marks(const store::ChannelKey& key, int64_t cutoff, store::KeyHashFn hash,
                     store::RecoverDone done) override {
    ++mark_recoveries;
    inner_->recover_marks(key, cutoff, hash, std::move(done));
  }
  void append(store::AppendRequest req, store::AppendDone done) override {
    inner_->append(std::move(req), std::move(done));
  }
  void read_after(const store::ChannelKey& key, uint64_t after, uint32_t limit,
                  store::ReadDone done) override {
    // The partition's own reads only (the topic's key-hash record is read too).
    if (key.channel == partition_channel("t", 0)) {
      ++reads;
      if (fail_reads) return done(Error{ErrorCode::kUnavailable, "read failed (test)"});
      if (hang_reads) {
        std::lock_guard lock(mu_);
        parked_.push_back(Parked{key, after, limit, std::move(done)});
        return;
      }
    }
    inner_->read_after(key, after, limit, std::move(done));
  }
  void read_before(const store::ChannelKey& key, uint64_t before, uint32_t limit,
                   store::ReadDone done) override {
    inner_->read_before(key, before, limit, std::move(done));
  }
  void flush() override { inner_->flush(); }
  size_t pending() const override { return inner_->pending(); }

  // The held reads, answered now by the store (late); returns once their
  // answers were handed over.
  void release_reads() {
    std::vector<Parked> parked;
    {
      std::lock_guard lock(mu_);
      parked.swap(parked_);
    }
    for (auto& r : parked) {
      std::promise<void> answered;
      inner_->read_after(r.key, r.after, r.limit,
                         [&answered, done = std::move(r.done)](Result<std::vector<store::StoredMessage>> m) {
                           done(std::move(m));
                           answered.set_value();
                         });
      answered.get_future().wait();
    }
  }
  // Forgets the held reads unanswered (their partition is gone).
  void drop_reads() {
    std::lock_guard lock(mu_);
    parked_.clear();
  }
  size_t parked() {
    std::lock_guard lock(mu_);
    return parked_.size();
  }
  // A read by the test itself, never counted or held.
  std::vector<store::StoredMessage> read_back(const store::ChannelKey& key, uint64_t after, uint32_t limit) {
    std::promise<Result<std::vector<store::StoredMessage>>> got;
    inner_->read_after(key, after, limit, [&got](auto r) { got.set_value(std::move(r)); });
    auto r = got.get_future().get();
    EXPECT_TRUE(r);
    return r ? std::move(*r) : std::vector<store::StoredMessage>{};
  }
  // Closes the inner store and opens another (a process restart), or none.
  void replace(std::unique_ptr<store::Store> inner) {
    inner_.reset();
    inner_ = std::move(inner);
  }

  std::atomic<int> reads{0};
  std::atomic<int> mark_recoveries{0};
  std::atomic<bool> fail_reads{false};
  std::atomic<bool> hang_reads{false};

 private:
  struct Parked {
    store::ChannelKey key;
    uint64_t after;
    uint32_t limit;
    store::ReadDone done;
  };
  std::unique_ptr<store::Store> inner_;
  std::mutex mu_;
  std::vector<Parked> parked_;
};

uint64_t one_fingerprint(std::string_view) { return 0x5eed; }

protocol::EmitEvent ev(std::string id, std::string key = "k") {
  return protocol::EmitEvent{std::move(key), "pick", std::move(id), "{}"};
}

class PartitionDedupeTest : public ::testing::Test {
 protected:
  PartitionDedupeTest() : PartitionDedupeTest(std::make_unique<store::MemoryStore>()) {}
  explicit PartitionDedupeTest(std::unique_ptr<store::Store> inner)
      : metrics_(1), store_(std::make_unique<ReadCountingStore>(std::move(inner))) {
    tenant_.id = "demo";
    TopicConfig tc;
    tc.partitions = 1;
    tc.snapshot_s = 0;
    tenant_.topics["t"] = tc;
  }
  ~PartitionDedupeTest() override { stop(); }

  // A (re)start of the topic on a loop of its own; `fp` replaces its fingerprints.
  void start(store::DedupeIndex::HashFn fp = nullptr) {
    loops_ = std::make_unique<runtime::LoopGroup>(1);
    loops_->start();
    ASSERT_TRUE(runtime::run_and_wait(*loops_, 0, [&] {
      topic_ = std::make_unique<Topic>(0, *loops_, *store_, tenant_, "t", tenant_.topics["t"],
                                       std::make_shared<TopicStats>("demo/t", 1), metrics_);
      if (fp) topic_->partition(0).set_fingerprint_for_tests(fp);
    }));
  }
  // As a server stops: the loop first, then the topic.
  void stop() {
    if (!loops_) return;
    loops_->stop();
    topic_.reset();
    loops_.reset();
  }
  // Several emits handed to the topic in one task of its loop, in order; their
  // outcomes, to wait for (answered()).
  using Answers = std::vector<std::shared_ptr<std::promise<EmitOutcome>>>;
  Answers send_together(std::vector<std::vector<protocol::EmitEvent>> emits) {
    Answers done;
    std::vector<EmitRequest> reqs;
    for (auto& evs : emits) {
      auto d = std::make_shared<std::promise<EmitOutcome>>();
      EmitRequest req;
      req.tenant = &tenant_;
      req.topic = "t";
      req.from = "gs";
      req.events = std::move(evs);
      req.done = [d](EmitOutcome out) { d->set_value(std::move(out)); };
      done.push_back(d);
      reqs.push_back(std::move(req));
    }
    EXPECT_TRUE(runtime::run_and_wait(*loops_, 0, [&] {
      for (auto& r : reqs) topic_->emit(std::move(r));
    }));
    return done;
  }
  std::vector<EmitOutcome> answered(Answers& done) {
    std::vector<EmitOutcome> out;
    for (auto& d : done) {
      auto f = d->get_future();
      if (f.wait_for(5s) != std::future_status::ready) {
        ADD_FAILURE() << "an emit was not answered";
        out.push_back(EmitOutcome::failed(Error{ErrorCode::kInternal, "no answer"}));
        continue;
      }
      out.push_back(f.get());
    }
    return out;
  }
  std::vector<EmitOutcome> emit_together(std::vector<std::vector<protocol::EmitEvent>> emits) {
    auto done = send_together(std::move(emits));
    return answered(done);
  }
  EmitOutcome emit(std::vector<protocol::EmitEvent> evs) {
    return std::move(emit_together({std::move(evs)}).front());
  }
  // The (offset, id) of every event the store holds for the partition.
  std::vector<std::pair<uint64_t, std::string>> held() {
    std::vector<std::pair<uint64_t, std::string>> out;
    const store::ChannelId id{"demo", partition_channel("t", 0)};
    for (;;) {
      auto page = store_->read_back(id, out.empty() ? 0 : out.back().first, 1000);
      if (page.empty()) return out;
      for (const auto& m : page) out.emplace_back(m.seq, m.id);
    }
  }
  static std::vector<uint64_t> offs(const EmitOutcome& o) {
    std::vector<uint64_t> v;
    for (const auto& [p, off] : o.offs) v.push_back(off);
    return v;
  }

  metrics::Metrics metrics_;
  std::unique_ptr<ReadCountingStore> store_;
  TenantConfig tenant_;
  std::unique_ptr<runtime::LoopGroup> loops_;
  std::unique_ptr<Topic> topic_;
};

using Offs = std::vector<uint64_t>;
using Dups = std::vector<bool>;

TEST_F(PartitionDedupeTest, ARetryIsAnsweredWithTheOriginalOffsetAfterOneRead) {
  start();
  auto first = emit({ev("id-1"), ev("id-2")});
  ASSERT_TRUE(first.status);
  EXPECT_EQ(offs(first), (Offs{1, 2}));
  EXPECT_EQ(store_->reads.load(), 0) << "a new id costs no read";
  auto again = emit({ev("id-2"), ev("id-1")});
  ASSERT_TRUE(again.status);
  EXPECT_EQ(offs(again), (Offs{2, 1}));
  EXPECT_EQ(again.dup, (Dups{true, true}));
  EXPECT_EQ(store_->reads.load(), 2);
  EXPECT_EQ(held().size(), 2u);
}

TEST_F(PartitionDedupeTest, OneFingerprintForEveryIdNeverDropsADistinctEvent) {
  start(&one_fingerprint);
  EXPECT_EQ(offs(emit({ev("id-1")})), Offs{1});
  auto second = emit({ev("id-2")});  // a hit on offset 1, whose event is another id
  EXPECT_EQ(offs(second), Offs{2});
  EXPECT_EQ(second.dup, Dups{false});
  EXPECT_EQ(offs(emit({ev("id-3")})), Offs{3});
  auto retry = emit({ev("id-3"), ev("id-1"), ev("id-2")});
  EXPECT_EQ(offs(retry), (Offs{3, 1, 2}));
  EXPECT_EQ(retry.dup, (Dups{true, true, true}));
  EXPECT_EQ(held(), (std::vector<std::pair<uint64_t, std::string>>{{1, "id-1"}, {2, "id-2"}, {3, "id-3"}}));
}

TEST_F(PartitionDedupeTest, AppendsBehindAConfirmationKeepTheirOrder) {
  start(&one_fingerprint);
  EXPECT_EQ(offs(emit({ev("id-1")})), Offs{1});
  // id-2 waits for the read of offset 1; the event without an id, of the same
  // key, is placed after it, and the retry of id-1 found as it.
  auto out = emit_together({{ev("id-2"), ev("")}, {ev("id-1")}, {ev("id-4")}});
  EXPECT_EQ(offs(out[0]), (Offs{2, 3}));
  EXPECT_EQ(out[0].dup, (Dups{false, false}));
  EXPECT_EQ(offs(out[1]), Offs{1});
  EXPECT_EQ(out[1].dup, Dups{true});
  EXPECT_EQ(offs(out[2]), Offs{4});
  EXPECT_EQ(held(), (std::vector<std::pair<uint64_t, std::string>>{
                        {1, "id-1"}, {2, "id-2"}, {3, ""}, {4, "id-4"}}));
}

TEST_F(PartitionDedupeTest, ADuplicateOfAnAppendInFlightWaitsForItWithoutARead) {
  start(&one_fingerprint);
  // One task: the first append is still in flight when the others are placed.
  auto out = emit_together({{ev("id-1")}, {ev("id-2")}, {ev("id-1")}, {ev("id-2")}});
  EXPECT_EQ(offs(out[0]), Offs{1});
  EXPECT_EQ(offs(out[1]), Offs{2});
  EXPECT_EQ(offs(out[2]), Offs{1});
  EXPECT_EQ(out[2].dup, Dups{true});
  EXPECT_EQ(offs(out[3]), Offs{2});
  EXPECT_EQ(out[3].dup, Dups{true});
  EXPECT_EQ(store_->reads.load(), 0);
  EXPECT_EQ(held().size(), 2u);
}

TEST_F(PartitionDedupeTest, ARestartRebuildsTheWindowFromTheStore) {
  start();
  EXPECT_EQ(offs(emit({ev("id-1"), ev("id-2")})), (Offs{1, 2}));
  stop();
  start();
  auto again = emit({ev("id-2"), ev("id-3")});
  EXPECT_EQ(offs(again), (Offs{2, 3}));
  EXPECT_EQ(again.dup, (Dups{true, false}));
}

TEST_F(PartitionDedupeTest, AConfirmationThatCannotBeReadIsAnErrorNotAGuess) {
  start();
  EXPECT_EQ(offs(emit({ev("id-1")})), Offs{1});
  store_->fail_reads = true;
  auto failed = emit({ev("id-1")});
  EXPECT_FALSE(failed.status);
  EXPECT_EQ(failed.status.error().code, ErrorCode::kUnavailable);
  store_->fail_reads = false;
  auto retry = emit({ev("id-1")});
  EXPECT_EQ(offs(retry), Offs{1});
  EXPECT_EQ(retry.dup, Dups{true});
  EXPECT_EQ(held().size(), 1u);
}

TEST_F(PartitionDedupeTest, AnIdIsRememberedWhileItsEventIsKept) {
  // docs/operations.md: retention must cover the dedupe window. Past it, the
  // event that would confirm the id is gone, and the id is a new event.
  tenant_.topics["t"].retention = 1;
  start();
  EXPECT_EQ(offs(emit({ev("id-1")})), Offs{1});
  std::vector<protocol::EmitEvent> many(100, ev(""));
  ASSERT_TRUE(emit(many).status);
  auto again = emit({ev("id-1")});
  EXPECT_EQ(again.dup, Dups{false});
  EXPECT_EQ(offs(again), Offs{102});
}

// ---- On the segment log, with a read that hangs ----------------------------

// The embedded store with topic partitions in its segment log (the server's default).
std::unique_ptr<store::Store> open_segments(const std::string& dir) {
  store::EmbeddedOptions o;
  o.dir = dir;
  o.topic_log = store::TopicLog::kSegment;
  o.verify_bytes = 0;
  o.is_partition = [](const store::ChannelId& id) {
    return parse_partition_channel(id.channel).has_value();
  };
  auto opened = store::open_embedded_store(o);
  EXPECT_TRUE(opened) << (opened ? "" : opened.error().msg);
  return opened ? std::move(*opened) : nullptr;
}

// Before the fixture: its store lives in this directory.
struct SegmentDir {
  store::testing::TempDir dir;
};

class PartitionHoldTest : private SegmentDir, public PartitionDedupeTest {
 protected:
  PartitionHoldTest() : PartitionDedupeTest(open_segments(dir.sub("store"))) {}

  void start_with_deadline(std::chrono::milliseconds d) {
    start();
    ASSERT_TRUE(runtime::run_and_wait(*loops_, 0, [&] {
      topic_->partition(0).set_confirm_deadline_for_tests(d);
    }));
  }
  // As a process restarts: the server stops, the store closes (the read it
  // never answered goes with it) and opens again from its files.
  void restart(std::chrono::milliseconds d) {
    reopen();
    start_with_deadline(d);
  }
  // The server stopped and the store opened again from its files, not started.
  void reopen() {
    stop();
    store_->drop_reads();
    store_->replace(nullptr);
    store_->replace(open_segments(dir.sub("store")));
  }
  int64_t held_gauge() const { return metrics_.total(&metrics::ThreadMetrics::event_dedupe_held); }
  uint64_t overflows() const {
    return metrics_.total(&metrics::ThreadMetrics::event_dedupe_held_overflows);
  }
  uint64_t timeouts() const {
    return metrics_.total(&metrics::ThreadMetrics::event_dedupe_confirm_timeouts);
  }
  static void expect_error(const EmitOutcome& o, ErrorCode code, int retry_ms) {
    ASSERT_FALSE(o.status);
    EXPECT_EQ(o.status.error().code, code);
    EXPECT_EQ(o.status.error().retry_ms, retry_ms);
  }
};

using Held = std::vector<std::pair<uint64_t, std::string>>;

TEST_F(PartitionHoldTest, AppendsPastTheHeldBoundAreAnsweredBackpressure) {
  start();
  ASSERT_EQ(offs(emit({ev("id-1")})), Offs{1});
  store_->hang_reads = true;
  // The retry waits for the read of offset 1 and every later append of the
  // partition waits behind it: 4,095 more fit, 905 of the last emit do not.
  std::vector<std::vector<protocol::EmitEvent>> emits{{ev("id-1")}};
  for (int i = 0; i < 5; ++i) emits.emplace_back(1000, ev(""));
  auto answers = send_together(std::move(emits));
  ASSERT_TRUE(runtime::run_and_wait(*loops_, 0, [&] {
    EXPECT_EQ(topic_->partition(0).held_appends(), Partition::kMaxHeld);
  }));
  EXPECT_EQ(held_gauge(), 4096);
  EXPECT_EQ(overflows(), 905u);
  EXPECT_NE(metrics_.render().find("\nparley_event_dedupe_held 4096\n"), std::string::npos);
  EXPECT_NE(metrics_.render().find("\nparley_event_dedupe_held_overflows_total 905\n"),
            std::string::npos);

  store_->hang_reads = false;
  store_->release_reads();
  auto out = answered(answers);
  EXPECT_EQ(offs(out[0]), Offs{1});
  EXPECT_EQ(out[0].dup, Dups{true});
  for (size_t i = 1; i <= 4; ++i) {
    ASSERT_TRUE(out[i].status) << i;
    EXPECT_EQ(offs(out[i]).front(), 2 + (i - 1) * 1000) << i;
    EXPECT_EQ(offs(out[i]).back(), 1 + i * 1000) << i;
  }
  expect_error(out[5], ErrorCode::kBackpressure, Partition::kHeldRetryMs);
  // The event confirmed, then the 4,095 held, in order and without a gap.
  const Held stored = held();
  ASSERT_EQ(stored.size(), 4096u);
  EXPECT_EQ(stored.back().first, 4096u);
  EXPECT_EQ(held_gauge(), 0);
}

TEST_F(PartitionHoldTest, AConfirmationPastItsDeadlineAnswersTheHeldAppendsUnavailable) {
  start_with_deadline(300ms);
  ASSERT_EQ(offs(emit({ev("id-1")})), Offs{1});
  store_->hang_reads = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = emit_together({{ev("id-1")}, {ev("id-2")}, {ev("")}});
  const auto took = std::chrono::steady_clock::now() - t0;
  for (const auto& o : out) expect_error(o, ErrorCode::kUnavailable, 1000);
  EXPECT_GE(took, 300ms);
  EXPECT_EQ(timeouts(), 1u);
  EXPECT_EQ(held_gauge(), 0);
  EXPECT_EQ(store_->parked(), 1u) << "the read is still out";
  EXPECT_EQ(held(), (Held{{1, "id-1"}})) << "nothing held was stored";
}

TEST_F(PartitionHoldTest, AppendsAnsweredAtTheDeadlineKeepTheirOrderAndTheLateAnswerChangesNothing) {
  start_with_deadline(300ms);
  ASSERT_EQ(offs(emit({ev("id-1")})), Offs{1});
  store_->hang_reads = true;
  // One key: the retry of id-1, an event without an id, id-2, in this order.
  auto first = emit_together({{ev("id-1"), ev("")}, {ev("id-2")}});
  for (const auto& o : first) expect_error(o, ErrorCode::kUnavailable, 1000);
  EXPECT_EQ(held(), (Held{{1, "id-1"}})) << "none of them overtook the retry";
  store_->hang_reads = false;
  store_->release_reads();  // offset 1 holds id-1, as the retry asked, too late
  ASSERT_TRUE(runtime::run_and_wait(*loops_, 0, [] {}));
  EXPECT_EQ(held(), (Held{{1, "id-1"}}));

  // Sent again in their order, they land in it.
  auto again = emit_together({{ev("id-1"), ev("")}, {ev("id-2")}});
  EXPECT_EQ(offs(again[0]), (Offs{1, 2}));
  EXPECT_EQ(again[0].dup, (Dups{true, false}));
  EXPECT_EQ(offs(again[1]), Offs{3});
  EXPECT_EQ(held(), (Held{{1, "id-1"}, {2, ""}, {3, "id-2"}}));
  EXPECT_EQ(store_->reads.load(), 2);
}

TEST_F(PartitionHoldTest, ARestartAfterATimedOutConfirmationIsClean) {
  start_with_deadline(300ms);
  ASSERT_EQ(offs(emit({ev("id-1"), ev("id-2")})), (Offs{1, 2}));
  store_->hang_reads = true;
  expect_error(emit({ev("id-2"), ev("id-3")}), ErrorCode::kUnavailable, 1000);
  restart(300ms);
  store_->hang_reads = false;
  EXPECT_EQ(held_gauge(), 0);
  // The window came back from the segments: id-2 is the event at 2, id-3 new.
  auto again = emit({ev("id-2"), ev("id-3")});
  ASSERT_TRUE(again.status);
  EXPECT_EQ(offs(again), (Offs{2, 3}));
  EXPECT_EQ(again.dup, (Dups{true, false}));
  EXPECT_EQ(held(), (Held{{1, "id-1"}, {2, "id-2"}, {3, "id-3"}}));
}

TEST_F(PartitionHoldTest, ARestartHandsTheWindowOverAsFingerprintsOfTheWindowsOwnHash) {
  // Every id under one fingerprint: the segment log hashes the ids it reads
  // with the partition's function, so the retry after the restart is found (a
  // mark under the default hash would not be) and each candidate is read.
  start(one_fingerprint);
  ASSERT_EQ(offs(emit({ev("id-1"), ev("id-2"), ev(""), ev("id-3")})), (Offs{1, 2, 3, 4}));
  reopen();
  const int recoveries = store_->mark_recoveries.load();
  start(one_fingerprint);
  auto again = emit({ev("id-2"), ev("id-4"), ev("id-1")});
  ASSERT_TRUE(again.status);
  EXPECT_EQ(offs(again), (Offs{2, 5, 1}));
  EXPECT_EQ(again.dup, (Dups{true, false, true}));
  EXPECT_GT(store_->mark_recoveries.load(), recoveries) << "recovered through recover_marks";
  EXPECT_EQ(held(), (Held{{1, "id-1"}, {2, "id-2"}, {3, ""}, {4, "id-3"}, {5, "id-4"}}));
}

}  // namespace
}  // namespace parley::events
