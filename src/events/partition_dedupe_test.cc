// A topic partition's dedupe window (partition.h, store/dedupe_index.h) over a
// real loop and a real MemoryStore, no server: a retry is answered with its
// original offset after one read of the event there; a fingerprint shared by two
// ids never drops the second; appends behind a confirmation keep their order; a
// duplicate of an append in flight waits for it without a read; a restart
// rebuilds the window from the store; a failed read is an error, not a guess.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "events/topic.h"
#include "events/topic_channel.h"
#include "runtime/run_and_wait.h"
#include "store/memory_store.h"

namespace parley::events {
namespace {

using namespace std::chrono_literals;

// The MemoryStore, counting the partition's reads (a confirmation is one) and
// failing them on demand.
class ReadCountingStore final : public store::Store {
 public:
  void recover(const store::ChannelKey& key, int64_t cutoff, store::RecoverDone done) override {
    inner_.recover(key, cutoff, std::move(done));
  }
  void append(store::AppendRequest req, store::AppendDone done) override {
    inner_.append(std::move(req), std::move(done));
  }
  void read_after(const store::ChannelKey& key, uint64_t after, uint32_t limit,
                  store::ReadDone done) override {
    // The partition's own reads only (the topic's key-hash record is read too).
    if (key.channel == partition_channel("t", 0)) {
      ++reads;
      if (fail_reads) return done(Error{ErrorCode::kUnavailable, "read failed (test)"});
    }
    inner_.read_after(key, after, limit, std::move(done));
  }
  void read_before(const store::ChannelKey& key, uint64_t before, uint32_t limit,
                   store::ReadDone done) override {
    inner_.read_before(key, before, limit, std::move(done));
  }
  void flush() override {}
  size_t pending() const override { return 0; }

  std::atomic<int> reads{0};
  std::atomic<bool> fail_reads{false};

 private:
  store::MemoryStore inner_;
};

uint64_t one_fingerprint(std::string_view) { return 0x5eed; }

protocol::EmitEvent ev(std::string id, std::string key = "k") {
  return protocol::EmitEvent{std::move(key), "pick", std::move(id), "{}"};
}

class PartitionDedupeTest : public ::testing::Test {
 protected:
  PartitionDedupeTest() : metrics_(1) {
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
      topic_ = std::make_unique<Topic>(0, *loops_, store_, tenant_, "t", tenant_.topics["t"],
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
  // Several emits handed to the topic in one task of its loop, in order; their outcomes.
  std::vector<EmitOutcome> emit_together(std::vector<std::vector<protocol::EmitEvent>> emits) {
    std::vector<std::shared_ptr<std::promise<EmitOutcome>>> done;
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
  EmitOutcome emit(std::vector<protocol::EmitEvent> evs) {
    return std::move(emit_together({std::move(evs)}).front());
  }
  // The (offset, id) of every event the store holds for the partition.
  std::vector<std::pair<uint64_t, std::string>> held() {
    std::vector<std::pair<uint64_t, std::string>> out;
    store_.read_after(store::ChannelId{"demo", partition_channel("t", 0)}, 0, 1000,
                      [&](Result<std::vector<store::StoredMessage>> r) {
                        ASSERT_TRUE(r);
                        for (const auto& m : *r) out.emplace_back(m.seq, m.id);
                      });
    return out;
  }
  static std::vector<uint64_t> offs(const EmitOutcome& o) {
    std::vector<uint64_t> v;
    for (const auto& [p, off] : o.offs) v.push_back(off);
    return v;
  }

  metrics::Metrics metrics_;
  ReadCountingStore store_;
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
  EXPECT_EQ(store_.reads.load(), 0) << "a new id costs no read";
  auto again = emit({ev("id-2"), ev("id-1")});
  ASSERT_TRUE(again.status);
  EXPECT_EQ(offs(again), (Offs{2, 1}));
  EXPECT_EQ(again.dup, (Dups{true, true}));
  EXPECT_EQ(store_.reads.load(), 2);
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
  EXPECT_EQ(store_.reads.load(), 0);
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
  store_.fail_reads = true;
  auto failed = emit({ev("id-1")});
  EXPECT_FALSE(failed.status);
  EXPECT_EQ(failed.status.error().code, ErrorCode::kUnavailable);
  store_.fail_reads = false;
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

}  // namespace
}  // namespace parley::events
