// A topic's board snapshots (topic_snapshot.cc) over a real loop and a real
// MemoryStore, no server: a restarted topic loads the newest snapshot and
// replays only the events after its offsets; a snapshot that does not fit what
// the store holds is ignored and the topic replayed; a running topic writes its
// boards and committed offsets.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "events/topic.h"
#include "events/topic_channel.h"
#include "store/memory_store.h"

namespace parley::events {
namespace {

// The MemoryStore, telling the test when an append to one channel completed
// (the snapshot's, written on the topic's timer).
class WatchedStore final : public store::Store {
 public:
  explicit WatchedStore(std::string watched) : watched_(std::move(watched)) {}
  void recover(const store::ChannelKey& key, int64_t cutoff, store::RecoverDone done) override {
    inner_.recover(key, cutoff, std::move(done));
  }
  void append(store::AppendRequest req, store::AppendDone done) override {
    const bool watched = req.key.channel == watched_;
    std::string body = req.msg.body;
    inner_.append(std::move(req), [this, watched, body = std::move(body),
                                   done = std::move(done)](store::AppendOutcome out) {
      const bool ok = out.is_ok();
      done(std::move(out));
      if (!watched || !ok) return;
      std::lock_guard lock(mu_);
      appended_.push_back(body);
      cv_.notify_all();
    });
  }
  void read_after(const store::ChannelKey& key, uint64_t after, uint32_t limit,
                  store::ReadDone done) override {
    inner_.read_after(key, after, limit, std::move(done));
  }
  void read_before(const store::ChannelKey& key, uint64_t before, uint32_t limit,
                   store::ReadDone done) override {
    inner_.read_before(key, before, limit, std::move(done));
  }
  void flush() override {}
  size_t pending() const override { return 0; }

  // The body of the n-th append to the watched channel (1-based), once made.
  std::string wait_append(size_t n) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(10), [&] { return appended_.size() >= n; }));
    return appended_.size() >= n ? appended_[n - 1] : std::string();
  }

 private:
  store::MemoryStore inner_;
  std::string watched_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> appended_;
};

class TopicSnapshotTest : public ::testing::Test {
 protected:
  TopicSnapshotTest() : metrics_(1), store_(snapshot_channel("match")) {
    tenant_.id = "demo";
    TopicConfig tc;
    tc.partitions = 1;
    tc.snapshot_s = 3600;  // snapshots are read; none is written during a test but the last
    tenant_.topics["match"] = tc;
    LeaderboardConfig lb;
    lb.topic = "match";
    lb.type = "score";
    lb.member = "player";
    lb.score = "points";
    tenant_.leaderboards["hunt"] = lb;
  }
  ~TopicSnapshotTest() override { stop(); }

  template <typename Fn>
  void on_loop(Fn fn) {
    std::promise<void> ran;
    loops_->run_on(0, [&] {
      fn();
      ran.set_value();
    });
    ran.get_future().wait();
  }
  // A (re)start of the topic on loops of its own, as the engine creates it:
  // its boards rebuilt.
  void start() {
    loops_ = std::make_unique<runtime::LoopGroup>(1);
    loops_->start();
    on_loop([this] {
      topic_ = std::make_unique<Topic>(0, *loops_, store_, tenant_, "match", tenant_.topics["match"],
                                       std::make_shared<TopicStats>("demo/match", 1), metrics_);
      topic_->rebuild_boards();
    });
  }
  // As a server stops: the loops first (what they still had queued is dropped),
  // then the topic. A topic is never destroyed under its running loop.
  void stop() {
    if (!loops_) return;
    loops_->stop();
    topic_.reset();
    loops_.reset();
  }
  // Emits one score event per (player, points), in one emit; waits for its ack.
  void emit(std::vector<std::pair<std::string, int>> scores) {
    EmitRequest req;
    req.tenant = &tenant_;
    req.topic = "match";
    req.from = "server";
    for (const auto& [player, points] : scores) {
      req.events.push_back({"k", "score", "",
                            R"({"player":")" + player + R"(","points":)" + std::to_string(points) + "}"});
    }
    auto done = std::make_shared<std::promise<EmitOutcome>>();
    auto f = done->get_future();
    req.done = [done](EmitOutcome out) { done->set_value(std::move(out)); };
    on_loop([&] { topic_->emit(std::move(req)); });
    ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    ASSERT_TRUE(f.get().status);
  }
  // `player`'s score on the board once it is rebuilt (rank waits for that);
  // -1 when not on it.
  double score_of(const std::string& player) {
    auto answer = std::make_shared<std::promise<std::vector<RankEntry>>>();
    auto f = answer->get_future();
    RankRequest req;
    req.board = "hunt";
    req.member = player;
    req.around = 0;
    req.done = [answer](Status, std::vector<RankEntry>, std::vector<RankEntry> entries) {
      answer->set_value(std::move(entries));
    };
    on_loop([&] { topic_->board("hunt")->rank(std::move(req)); });
    EXPECT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    const auto entries = f.get();
    return entries.empty() ? -1 : entries.front().score;
  }
  // A snapshot record, as the topic writes them, put in the store by hand.
  void put_snapshot(uint64_t seq, std::string body) {
    std::promise<store::AppendOutcome> done;
    store_.append(store::AppendRequest{store::ChannelId{"demo", snapshot_channel("match")},
                                       store::StoredMessage{seq, wall_ms(), "server", "", std::move(body)},
                                       2, 0, 0},
                  [&](store::AppendOutcome out) { done.set_value(std::move(out)); });
    ASSERT_TRUE(done.get_future().get().status());
  }

  metrics::Metrics metrics_;
  WatchedStore store_;
  TenantConfig tenant_;
  std::unique_ptr<runtime::LoopGroup> loops_;
  std::unique_ptr<Topic> topic_;
};

TEST_F(TopicSnapshotTest, ARestartLoadsTheSnapshotAndReplaysOnlyTheEventsAfterIt) {
  start();
  emit({{"ann", 10}, {"ann", 10}, {"ann", 10}});  // offsets 1-3
  EXPECT_EQ(score_of("ann"), 30);
  stop();
  // Taken after offset 2, and saying ann had 1000 then: only offset 3 is replayed.
  put_snapshot(1, R"({"v":1,"parts":1,"offs":[2],"boards":{"hunt":[{"round":"","touched":1,"e":[["ann",1000]]}]}})");
  start();
  EXPECT_EQ(score_of("ann"), 1010);
  emit({{"ann", 5}});  // and what commits after the restart counts once
  EXPECT_EQ(score_of("ann"), 1015);
}

TEST_F(TopicSnapshotTest, ASnapshotThatDoesNotFitIsIgnoredAndTheTopicReplayed) {
  start();
  emit({{"ann", 10}, {"ann", 10}, {"ann", 10}});
  stop();
  const char* unfit[] = {
      // Another partition count.
      R"({"v":1,"parts":2,"offs":[2,0],"boards":{"hunt":[{"round":"","touched":1,"e":[["ann",1000]]}]}})",
      // Past what the store holds (a store that lost data, or another node's).
      R"({"v":1,"parts":1,"offs":[4],"boards":{"hunt":[{"round":"","touched":1,"e":[["ann",1000]]}]}})",
      // Without this board (added since).
      R"({"v":1,"parts":1,"offs":[2],"boards":{"kills":[]}})",
      // A round on a board without rounds.
      R"({"v":1,"parts":1,"offs":[2],"boards":{"hunt":[{"round":"r1","touched":1,"e":[["ann",1000]]}]}})",
      "not json",
  };
  uint64_t seq = 0;
  for (const char* body : unfit) {
    put_snapshot(++seq, body);  // the newest is the one read
    start();
    EXPECT_EQ(score_of("ann"), 30) << body;
    stop();
  }
}

TEST_F(TopicSnapshotTest, ATopicWritesItsBoardsAndCommittedOffsets) {
  tenant_.topics["match"].snapshot_s = 1;
  start();
  emit({{"ann", 10}, {"ann", 20}, {"bob", 7}});
  // Every snapshot_s while events commit; one taken before the emit (a stalled
  // machine) is followed by one after it.
  simdjson::dom::parser parser;
  simdjson::dom::element snap;
  std::string body;
  for (size_t n = 1; n <= 3; ++n) {
    body = store_.wait_append(n);
    ASSERT_FALSE(parser.parse(body).get(snap)) << body;
    EXPECT_EQ(uint64_t(snap["parts"]), 1u);
    ASSERT_EQ(simdjson::dom::array(snap["offs"]).size(), 1u);
    if (uint64_t(snap["offs"].at(0)) == 3) break;
  }
  EXPECT_EQ(uint64_t(snap["offs"].at(0)), 3u) << "the partition's committed offset";
  simdjson::dom::array rounds = snap["boards"]["hunt"];
  ASSERT_EQ(rounds.size(), 1u) << body;
  EXPECT_EQ(std::string_view(rounds.at(0)["round"]), "");
  simdjson::dom::array e = rounds.at(0)["e"];
  ASSERT_EQ(e.size(), 2u) << body;
  EXPECT_EQ(std::string_view(e.at(0).at(0)), "ann");
  EXPECT_EQ(double(e.at(0).at(1)), 30);
  EXPECT_EQ(std::string_view(e.at(1).at(0)), "bob");
  EXPECT_EQ(double(e.at(1).at(1)), 7);
  // What a restart loads from it: the same board.
  stop();
  start();
  EXPECT_EQ(score_of("ann"), 30);
  EXPECT_EQ(score_of("bob"), 7);
}

}  // namespace
}  // namespace parley::events
