// The hub and its shards, Dragonfly-style: real event loops (runtime::LoopGroup),
// a fake Store whose every call waits until the test completes it (or fails it),
// and fake subscribers that record what their loop hands them. Each test checks
// what each loop receives, in order.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hub/hub.h"
#include "metrics/metrics.h"
#include "net/connection.h"
#include "runtime/loop_group.h"
#include "store/manual_store.h"
#include "store/store.h"

namespace parley::hub {
namespace {

using namespace std::chrono_literals;
using store::StoredMessage;
using store::testing::ManualStore;
using store::testing::StoreCall;
using store::testing::recovered;

constexpr auto kWait = 5s;


StoredMessage message(uint64_t seq, size_t pad = 0) {
  return StoredMessage{seq, 1000 + static_cast<int64_t>(seq), "u", "m" + std::to_string(seq),
                       "{\"p\":\"" + std::string(pad, 'x') + "\"}"};
}

// The stored messages [first, last].
std::vector<StoredMessage> messages(uint64_t first, uint64_t last, size_t pad = 0) {
  std::vector<StoredMessage> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(message(s, pad));
  return out;
}

// ---- A subscriber that records the frames its loop sends it.

class FakeSub final : public Subscriber {
 public:
  FakeSub(uint64_t conn, std::string user, unsigned loop)
      : conn_(conn), user_(std::move(user)), loop_(loop) {}
  uint64_t conn_id() const override { return conn_; }
  const std::string& user_id() const override { return user_; }
  unsigned loop() const override { return loop_; }
  bool gone() const override { return false; }
  void send(net::OutFrame&& frame) override {
    EXPECT_EQ(runtime::LoopGroup::current(), static_cast<int>(loop_));
    std::string text;
    if (frame.gathered()) {
      for (const auto& p : frame.parts()) text.append(static_cast<const char*>(p.data()), p.size());
    } else {
      text = frame.owned();
    }
    record((frame.backfill ? "backfill " : "") + text);
  }
  // What the session's joined callback saw, recorded in the same order.
  void record(std::string s) {
    {
      std::lock_guard lock(mu_);
      got_.push_back(std::move(s));
    }
    cv_.notify_all();
  }
  // Waits for at least n records; returns them all.
  std::vector<std::string> wait_for(size_t n) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, kWait, [&] { return got_.size() >= n; }))
        << "have " << got_.size() << " of " << n;
    return got_;
  }
  std::vector<std::string> now() {
    std::lock_guard lock(mu_);
    return got_;
  }

 private:
  uint64_t conn_;
  std::string user_;
  unsigned loop_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> got_;
};

// The seqs of every msg object in `records`, in order.
std::vector<uint64_t> seqs_in(const std::vector<std::string>& records) {
  std::vector<uint64_t> out;
  for (const auto& r : records) {
    for (size_t at = r.find("\"seq\":"); at != std::string::npos; at = r.find("\"seq\":", at + 1)) {
      if (r.rfind("joined", 0) == 0) break;
      out.push_back(std::stoull(r.substr(at + 6)));
    }
  }
  return out;
}

std::vector<uint64_t> range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

class HubTest : public ::testing::Test {
 protected:
  HubTest() : loops_(2), metrics_(2) {
    tenant_.id = "demo";
    tenant_.max_queue_bytes = 64 * 1024;  // backfill allowance: 256 KiB
    tenant_.default_namespace.tick_ms = 0;
    tenant_.default_namespace.presence = false;
    tenant_.default_namespace.history = 100000;
    hub_ = std::make_unique<Hub>(loops_, Stores{&store_, &store_}, metrics_, ShardOptions{});
    loops_.start();
  }
  ~HubTest() override {
    // Memberships leave on their loops before the loops stop.
    for (unsigned l = 0; l < 2; ++l) on_loop(l, [&] { members_[l].clear(); });
    loops_.stop();
  }

  template <typename Fn>
  void on_loop(unsigned loop, Fn fn) {
    std::promise<void> ran;
    loops_.run_on(loop, [&] {
      fn();
      ran.set_value();
    });
    ASSERT_EQ(ran.get_future().wait_for(kWait), std::future_status::ready);
  }

  // Joins sub (on its loop); the joined callback's result is recorded on sub as
  // "joined seq=<n> recovered=<b>" (or "error <code>").
  void join(const std::shared_ptr<FakeSub>& sub, const std::string& ch,
            std::optional<uint64_t> since = std::nullopt) {
    JoinRequest req;
    req.sub = sub;
    req.tenant = &tenant_;
    req.ch = ch;
    req.since = since;
    req.done = [sub](JoinResult r) {
      if (!r.status) return sub->record("error " + std::string(wire_name(r.status.error().code)));
      sub->record("joined seq=" + std::to_string(r.seq) + " recovered=" +
                  (r.recovered ? "true" : "false"));
    };
    const unsigned loop = sub->loop();
    on_loop(loop, [&] { members_[loop].push_back(hub_->join(std::move(req))); });
  }

  // Publishes from the HTTP API's identity (no join needed); the outcome arrives
  // in the returned future.
  std::future<store::AppendOutcome> publish(const std::string& ch, std::string body = "{}") {
    auto p = std::make_shared<std::promise<store::AppendOutcome>>();
    PublishRequest req;
    req.tenant = &tenant_;
    req.ch = ch;
    req.from = "server";
    req.body = std::move(body);
    req.reply_loop = 1;
    req.done = [p](store::AppendOutcome o) { p->set_value(std::move(o)); };
    hub_->publish(std::move(req));
    return p->get_future();
  }

  std::future<HistoryResult> history(const std::string& ch, std::optional<uint64_t> after,
                                     std::optional<uint64_t> before, uint32_t limit,
                                     uint64_t max_bytes = 1 << 20) {
    auto p = std::make_shared<std::promise<HistoryResult>>();
    HistoryRequest req;
    req.tenant = &tenant_;
    req.ch = ch;
    req.after = after;
    req.before = before;
    req.limit = limit;
    req.max_bytes = max_bytes;
    req.reply_loop = 0;
    req.done = [p](HistoryResult r) { p->set_value(std::move(r)); };
    hub_->history(std::move(req));
    return p->get_future();
  }

  // Loads `ch` at last_seq through a publish that the store acknowledges as
  // last_seq + 1; returns once it is acked.
  void load_with_one_publish(const std::string& ch, uint64_t last_seq) {
    auto acked = publish(ch);
    auto rec = store_.next(StoreCall::kRecover);
    recovered(rec, last_seq);
    auto app = store_.next(StoreCall::kAppend);
    EXPECT_EQ(app.append.msg.seq, last_seq + 1);
    app.append_done(store::Appended{last_seq + 1, false});
    EXPECT_EQ(acked.get()->seq, last_seq + 1);
  }

  // Lets what is posted settle: every loop runs a task, three rounds (a shard's
  // task, its outbox flush, the task on the receiving loop).
  void settle() {
    for (int round = 0; round < 3; ++round) {
      for (unsigned l = 0; l < 2; ++l) on_loop(l, [] {});
    }
  }

  runtime::LoopGroup loops_;
  metrics::Metrics metrics_;
  TenantConfig tenant_;
  ManualStore store_;
  std::unique_ptr<Hub> hub_;
  std::vector<Membership> members_[2];
};

TEST_F(HubTest, JoinWaitsForTheChannelLoadThenDeliversOnlyWhatIsAcked) {
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:a");
  auto rec = store_.next(StoreCall::kRecover);
  EXPECT_EQ(rec.id, (store::ChannelId{"demo", "chat:a"}));
  settle();
  EXPECT_TRUE(alice->now().empty()) << "answered before the channel was loaded";
  recovered(rec, 7);
  EXPECT_EQ(alice->wait_for(1)[0], "joined seq=7 recovered=false");

  auto acked = publish("chat:a", R"({"t":1})");
  auto app = store_.next(StoreCall::kAppend);
  EXPECT_EQ(app.append.msg.seq, 8u);
  settle();
  EXPECT_EQ(alice->now().size(), 1u) << "delivered before the store completed";
  app.append_done(store::Appended{8, false});
  EXPECT_EQ(acked.get()->seq, 8u);
  auto got = alice->wait_for(2);
  EXPECT_EQ(seqs_in({got[1]}), std::vector<uint64_t>{8});
  EXPECT_NE(got[1].find(R"("body":{"t":1})"), std::string::npos) << got[1];
}

TEST_F(HubTest, DroppingTheMembershipLeavesAtOnceAndTheShardForgetsTheMember) {
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  auto bob = std::make_shared<FakeSub>(2, "bob", 1);
  join(alice, "chat:b");
  recovered(*std::make_unique<StoreCall>(store_.next(StoreCall::kRecover)), 0);
  alice->wait_for(1);
  join(bob, "chat:b");
  bob->wait_for(1);

  // Moving the handle keeps the membership; destroying it leaves.
  on_loop(0, [&] {
    Membership moved = std::move(members_[0].back());
    members_[0].pop_back();
    EXPECT_TRUE(moved.active());
    members_[0].push_back(std::move(moved));
  });
  auto first = publish("chat:b");
  store_.next(StoreCall::kAppend).append_done(store::Appended{1, false});
  EXPECT_EQ(first.get()->seq, 1u);
  EXPECT_EQ(seqs_in({alice->wait_for(2)[1]}), std::vector<uint64_t>{1});
  EXPECT_EQ(seqs_in({bob->wait_for(2)[1]}), std::vector<uint64_t>{1});

  on_loop(0, [&] { members_[0].clear(); });  // alice's session drops its handle
  auto second = publish("chat:b");
  store_.next(StoreCall::kAppend).append_done(store::Appended{2, false});
  EXPECT_EQ(second.get()->seq, 2u);
  EXPECT_EQ(seqs_in({bob->wait_for(3)[2]}), std::vector<uint64_t>{2});
  settle();
  EXPECT_EQ(alice->now().size(), 2u) << "a member that left still receives";
}

TEST_F(HubTest, ALeaveBeforeTheJoinLandsRegistersNothingButTheJoinIsAnswered) {
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:c");
  auto rec = store_.next(StoreCall::kRecover);
  on_loop(0, [&] { members_[0].clear(); });  // left while the channel loads
  recovered(rec, 3);
  EXPECT_EQ(alice->wait_for(1)[0], "joined seq=3 recovered=false");
  auto acked = publish("chat:c");
  store_.next(StoreCall::kAppend).append_done(store::Appended{4, false});
  EXPECT_EQ(acked.get()->seq, 4u);
  settle();
  EXPECT_EQ(alice->now().size(), 1u) << "registered after it left";
}

TEST_F(HubTest, BackfillComesAfterJoinedAndBeforeAnythingNewerEvenWhenCommittedDuringTheRead) {
  load_with_one_publish("chat:d", 4);  // committed seq 5
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:d", 2);
  auto page = store_.next(StoreCall::kReadBefore);
  EXPECT_EQ(page.bound, 6u);  // below committed + 1
  EXPECT_EQ(page.limit, 3u);  // only what `since` misses

  // Seq 6 and 7 commit while the backfill is being read.
  auto p6 = publish("chat:d");
  store_.next(StoreCall::kAppend).append_done(store::Appended{6, false});
  EXPECT_EQ(p6.get()->seq, 6u);
  auto p7 = publish("chat:d");
  store_.next(StoreCall::kAppend).append_done(store::Appended{7, false});
  EXPECT_EQ(p7.get()->seq, 7u);
  settle();
  EXPECT_TRUE(alice->now().empty()) << "live events reached a member still reading backfill";

  page.read_done(messages(3, 5));
  auto catchup = store_.next(StoreCall::kReadAfter);  // what committed meanwhile
  EXPECT_EQ(catchup.bound, 5u);
  EXPECT_EQ(catchup.limit, 2u);
  catchup.read_done(messages(6, 7));
  auto got = alice->wait_for(2);
  EXPECT_EQ(got[0], "joined seq=7 recovered=true");
  EXPECT_EQ(got[1].rfind("backfill [", 0), 0u) << got[1];

  auto p8 = publish("chat:d");
  store_.next(StoreCall::kAppend).append_done(store::Appended{8, false});
  EXPECT_EQ(p8.get()->seq, 8u);
  got = alice->wait_for(3);
  EXPECT_EQ(seqs_in(got), range(3, 8)) << "each message once, in order, backfill first";
}

TEST_F(HubTest, BackfillReadsBoundedPagesAndStopsAtTheAllowance) {
  load_with_one_publish("chat:e", 99'999);  // 100,000 retained messages
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:e", 0);
  // ~560-byte messages against a 256 KiB allowance: under 470 fit, so at most
  // two pages of 256 are read out of 100,000.
  uint64_t before = 100'001;
  int pages = 0;
  while (alice->now().empty() && pages < 5) {
    auto c = store_.next();
    ASSERT_EQ(c.kind, StoreCall::kReadBefore);
    EXPECT_EQ(c.bound, before);
    EXPECT_LE(c.limit, kBackfillPage);
    c.read_done(messages(before - c.limit, before - 1, 500));
    before -= c.limit;
    ++pages;
    settle();  // the shard either asks for the next page or answers
  }
  EXPECT_EQ(pages, 2) << "read more (or less) than the allowance needs";
  auto got = alice->wait_for(2);
  EXPECT_EQ(got[0], "joined seq=100000 recovered=false");
  auto seqs = seqs_in(got);
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(seqs.back(), 100'000u);
  EXPECT_EQ(seqs, range(seqs.front(), 100'000)) << "the newest that fit, contiguous";
  uint64_t bytes = 0;
  for (size_t i = 1; i < got.size(); ++i) bytes += got[i].size() - std::string("backfill ").size();
  EXPECT_LE(bytes, tenant_.max_queue_bytes * net::kBackfillAllowance);
  EXPECT_TRUE(store_.quiet_for(100ms)) << "kept reading after the reply";
}

TEST_F(HubTest, HistoryIsCutAtTheCommittedSeq) {
  load_with_one_publish("chat:f", 2);  // committed seq 3
  auto pending = publish("chat:f");     // seq 4: written, not yet acknowledged
  auto app = store_.next(StoreCall::kAppend);
  EXPECT_EQ(app.append.msg.seq, 4u);

  auto after = history("chat:f", 0, std::nullopt, 50);
  auto read = store_.next(StoreCall::kReadAfter);
  read.read_done(messages(1, 4));  // the store already holds seq 4
  auto r = after.get();
  ASSERT_TRUE(r.status);
  EXPECT_EQ(r.count, 3u);
  EXPECT_EQ(seqs_in({r.msgs_json}), range(1, 3));

  auto before = history("chat:f", std::nullopt, UINT64_MAX, 50);
  auto back = store_.next(StoreCall::kReadBefore);
  EXPECT_EQ(back.bound, 4u);  // committed + 1
  back.read_done(messages(1, 3));
  EXPECT_EQ(seqs_in({before.get().msgs_json}), range(1, 3));

  app.append_done(store::Appended{4, false});
  EXPECT_EQ(pending.get()->seq, 4u);
}

TEST_F(HubTest, AHistoryReplyIsTrimmedToItsByteBudgetKeepingTheEndThePagerNeeds) {
  auto after = history("chat:g", 0, std::nullopt, 100, 2000);
  store_.next(StoreCall::kReadAfter).read_done(messages(1, 100, 100));
  auto r = after.get();
  EXPECT_LE(r.msgs_json.size(), 2000u);
  EXPECT_GT(r.count, 0u);
  EXPECT_EQ(seqs_in({r.msgs_json}), range(1, r.count)) << "after: the oldest";

  auto before = history("chat:g", std::nullopt, 101, 100, 2000);
  store_.next(StoreCall::kReadBefore).read_done(messages(1, 100, 100));
  r = before.get();
  EXPECT_LE(r.msgs_json.size(), 2000u);
  EXPECT_EQ(seqs_in({r.msgs_json}), range(101 - r.count, 100)) << "before: the newest";

  // One message always, however large, so that a pager moves on.
  auto big = history("chat:g", 0, std::nullopt, 10, 10);
  store_.next(StoreCall::kReadAfter).read_done(messages(1, 3, 100));
  EXPECT_EQ(big.get().count, 1u);
}

TEST_F(HubTest, AFailedAppendAnswersThePublisherReloadsTheChannelAndLeavesNoSeqGap) {
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:h");
  recovered(*std::make_unique<StoreCall>(store_.next(StoreCall::kRecover)), 10);
  alice->wait_for(1);

  auto p11 = publish("chat:h");
  auto a11 = store_.next(StoreCall::kAppend);
  EXPECT_EQ(a11.append.msg.seq, 11u);
  auto p12 = publish("chat:h");  // queued behind 11 in the same store
  auto a12 = store_.next(StoreCall::kAppend);
  EXPECT_EQ(a12.append.msg.seq, 12u);
  const Error down{ErrorCode::kUnavailable, "disk gone"};
  a11.append_done(down);
  a12.append_done(down);
  EXPECT_EQ(p11.get().error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(p12.get().error().code, ErrorCode::kUnavailable);
  settle();
  EXPECT_EQ(alice->now().size(), 1u) << "a failed message was delivered";

  // The next publish reloads the channel from the store: seq continues from
  // what it holds, never past a lost seq.
  auto p = publish("chat:h");
  auto rec = store_.next(StoreCall::kRecover);
  recovered(rec, 10);
  auto again = store_.next(StoreCall::kAppend);
  EXPECT_EQ(again.append.msg.seq, 11u);
  again.append_done(store::Appended{11, false});
  EXPECT_EQ(p.get()->seq, 11u);
  // The member stayed: it receives the message.
  EXPECT_EQ(seqs_in({alice->wait_for(2)[1]}), std::vector<uint64_t>{11});
}

TEST_F(HubTest, AFailedChannelLoadFailsTheJoinAndTheNextUseTriesAgain) {
  auto alice = std::make_shared<FakeSub>(1, "alice", 0);
  join(alice, "chat:i");
  store_.next(StoreCall::kRecover).recover_done(Error{ErrorCode::kUnavailable, "io"});
  EXPECT_EQ(alice->wait_for(1)[0], "error unavailable");
  join(alice, "chat:i");
  recovered(*std::make_unique<StoreCall>(store_.next(StoreCall::kRecover)), 2);
  EXPECT_EQ(alice->wait_for(2)[1], "joined seq=2 recovered=false");
}

}  // namespace
}  // namespace parley::hub
