// A Leaderboard on a real loop (runtime::LoopGroup of one), with no topic and
// no store: it is fed events by hand, as its topic feeds it committed ones.
// Everything the board does runs on that loop; the tests run their steps there
// and wait for them, and `rank` answers (posted to the reply loop) are awaited.
#include "events/leaderboard.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace parley::events {
namespace {

struct Ranks {
  Status status;
  std::vector<RankEntry> top, entries;
};

// A connection watching a board: keeps what it is sent, and lets a test wait
// for the n-th frame.
class FakeSink : public EventSink {
 public:
  uint64_t conn_id() const override { return 7; }
  unsigned loop() const override { return 0; }
  void deliver_event_frame(std::string frame, std::function<void()>) override {
    std::lock_guard lock(mu_);
    frames_.push_back(std::move(frame));
    if (waiting_ && frames_.size() >= want_) {
      waiting_->set_value();
      waiting_.reset();
    }
  }
  void deliver_event_frames(std::vector<std::string> frames) override {
    for (auto& f : frames) deliver_event_frame(std::move(f), nullptr);
  }
  // The n-th frame (1-based), once it came.
  std::string wait_frame(size_t n) {
    std::future<void> f;
    {
      std::lock_guard lock(mu_);
      if (frames_.size() < n) {
        want_ = n;
        waiting_.emplace();
        f = waiting_->get_future();
      }
    }
    if (f.valid()) {
      EXPECT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }
    std::lock_guard lock(mu_);
    return frames_.size() >= n ? frames_[n - 1] : std::string();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> frames_;
  size_t want_ = 0;
  std::optional<std::promise<void>> waiting_;
};

class LeaderboardTest : public ::testing::Test {
 protected:
  LeaderboardTest() : loops_(1), metrics_(1) {
    cfg_.topic = "match";
    cfg_.type = "score";
    cfg_.member = "player";
    cfg_.score = "points";
    loops_.start();
  }
  // The loop stops first (what it still had queued is dropped), then the
  // boards go: a board is never destroyed under its running loop.
  ~LeaderboardTest() override { loops_.stop(); }

  // Runs fn on the board's loop and waits for it.
  template <typename Fn>
  void on_loop(Fn fn) {
    std::promise<void> ran;
    loops_.run_on(0, [&] {
      fn();
      ran.set_value();
    });
    ran.get_future().wait();
  }
  Leaderboard& make(const LeaderboardConfig& cfg) {
    Leaderboard* b = nullptr;
    on_loop([&] {
      boards_.push_back(std::make_unique<Leaderboard>(0, loops_, "hunt", cfg, metrics_));
      b = boards_.back().get();
    });
    return *b;
  }
  void feed(Leaderboard& b, std::vector<std::string> bodies, std::string type = "score") {
    on_loop([&] {
      for (const auto& body : bodies) b.on_event(type, body);
    });
  }
  std::future<Ranks> ask(Leaderboard& b, std::string member, uint32_t top,
                         std::optional<std::string> round = std::nullopt) {
    auto p = std::make_shared<std::promise<Ranks>>();
    auto f = p->get_future();
    RankRequest req;
    req.board = "hunt";
    req.member = std::move(member);
    req.around = 1;
    req.top = top;
    req.round = std::move(round);
    req.reply_loop = 0;
    req.done = [p](Status st, std::vector<RankEntry> t, std::vector<RankEntry> e) {
      p->set_value(Ranks{std::move(st), std::move(t), std::move(e)});
    };
    on_loop([&] { b.rank(std::move(req)); });
    return f;
  }
  Ranks rank(Leaderboard& b, std::string member, uint32_t top,
             std::optional<std::string> round = std::nullopt) {
    auto f = ask(b, std::move(member), top, std::move(round));
    EXPECT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    return f.get();
  }
  // "member:score:rank,..." of a rank list, for exact comparisons.
  static std::string text(const std::vector<RankEntry>& es) {
    std::string out;
    for (const auto& e : es) {
      if (!out.empty()) out += ',';
      out += e.member + ':' + std::to_string(static_cast<int64_t>(e.score)) + ':' +
             std::to_string(e.rank);
    }
    return out;
  }

  runtime::LoopGroup loops_;
  metrics::Metrics metrics_;
  LeaderboardConfig cfg_;
  std::vector<std::unique_ptr<Leaderboard>> boards_;
};

TEST_F(LeaderboardTest, SumsTheScoresOfTheConfiguredTypeAndFields) {
  Leaderboard& b = make(cfg_);
  feed(b, {R"({"player":"ann","points":10})", R"({"player":"bob","points":25})",
           R"({"player":"ann","points":20})", R"({"player":"cid","points":5.5})"});
  feed(b, {R"({"player":"cid","points":1000})"}, "chat");  // another type
  const Ranks r = rank(b, "ann", 10);
  ASSERT_TRUE(r.status);
  EXPECT_EQ(text(r.top), "ann:30:1,bob:25:2,cid:5:3");
  EXPECT_EQ(r.top[2].score, 5.5);
  EXPECT_EQ(text(r.entries), "ann:30:1,bob:25:2") << "ann and one entry around it";
}

TEST_F(LeaderboardTest, EventsWithoutAUsableMemberOrScoreAreIgnored) {
  Leaderboard& b = make(cfg_);
  feed(b, {R"({"player":"ann","points":1})", R"({"player":"","points":50})",
           R"({"player":7,"points":50})", R"({"points":50})", R"({"player":"bob"})",
           R"({"player":"bob","points":"50"})", R"({"player":"bob","points":null})",
           R"([{"player":"bob","points":50}])", R"(not json)", R"({"player":"bob","points":1e999})"});
  EXPECT_EQ(text(rank(b, "", 10).top), "ann:1:1");
}

TEST_F(LeaderboardTest, LastAndAscendingFollowTheConfig) {
  LeaderboardConfig cfg = cfg_;
  cfg.agg = "last";
  cfg.order = "asc";  // a race: lower times rank first
  Leaderboard& b = make(cfg);
  feed(b, {R"({"player":"ann","points":90})", R"({"player":"bob","points":70})",
           R"({"player":"ann","points":60})", R"({"player":"cid","points":70})"});
  EXPECT_EQ(text(rank(b, "", 10).top), "ann:60:1,bob:70:2,cid:70:2");
}

TEST_F(LeaderboardTest, RoundsKeepBoardsApartAndARankNeedsOne) {
  LeaderboardConfig cfg = cfg_;
  cfg.round = "match";
  Leaderboard& b = make(cfg);
  feed(b, {R"({"player":"ann","points":10,"match":"r1"})", R"({"player":"bob","points":5,"match":12})",
           R"({"player":"ann","points":3,"match":12})", R"({"player":"cid","points":9,"match":1.5})",
           R"({"player":"dan","points":9})", R"({"player":"dan","points":9,"match":""})",
           R"({"player":"dan","points":9,"match":true})"});
  EXPECT_EQ(text(rank(b, "", 10, "r1").top), "ann:10:1");
  EXPECT_EQ(text(rank(b, "", 10, "12").top), "bob:5:1,ann:3:2") << "numeric rounds become strings";
  EXPECT_EQ(text(rank(b, "", 10, "1.5").top), "cid:9:1");
  const Ranks unknown = rank(b, "ann", 10, "r9");
  ASSERT_TRUE(unknown.status);
  EXPECT_TRUE(unknown.top.empty() && unknown.entries.empty()) << "an unknown round is an empty board";
  const Ranks none = rank(b, "ann", 10);
  ASSERT_FALSE(none.status);
  EXPECT_EQ(none.status.error().code, ErrorCode::kBadRequest);
}

TEST_F(LeaderboardTest, ARebuildHoldsLiveEventsAndRanksUntilItEnds) {
  Leaderboard& b = make(cfg_);
  on_loop([&] {
    b.begin_rebuild();
    b.on_event("score", R"({"player":"ann","points":100})");  // committed meanwhile
    b.replay("score", R"({"player":"ann","points":1})");     // replayed from the store
  });
  auto answer = ask(b, "ann", 10);
  // The rank was queued behind the rebuild: a task posted after it runs first.
  on_loop([] {});
  EXPECT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  on_loop([&] { b.finish_rebuild(); });
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(text(answer.get().top), "ann:101:1") << "the held event after the replayed one";
}

TEST_F(LeaderboardTest, ASnapshotRestoresTheSameBoard) {
  LeaderboardConfig cfg = cfg_;
  cfg.round = "match";
  Leaderboard& a = make(cfg);
  feed(a, {R"({"player":"ann","points":0.1,"match":"r1"})", R"({"player":"ann","points":0.2,"match":"r1"})",
           R"({"player":"bob","points":3,"match":"r1"})", R"({"player":"cid","points":3,"match":"r1"})",
           R"({"player":"ann","points":-4,"match":"r2"})"});
  std::string snap;
  on_loop([&] { a.write_snapshot(snap); });

  Leaderboard& b = make(cfg);
  simdjson::dom::parser parser;
  simdjson::dom::element rounds;
  ASSERT_FALSE(parser.parse(snap).get(rounds)) << snap;
  bool restored = false;
  on_loop([&] {
    b.begin_rebuild();
    restored = b.restore(rounds);
    b.finish_rebuild();
  });
  ASSERT_TRUE(restored) << snap;
  for (const char* round : {"r1", "r2"}) {
    const Ranks want = rank(a, "", 10, round), got = rank(b, "", 10, round);
    EXPECT_EQ(text(got.top), text(want.top)) << round;
    ASSERT_EQ(got.top.size(), want.top.size());
    for (size_t i = 0; i < got.top.size(); ++i) EXPECT_EQ(got.top[i].score, want.top[i].score);
  }
  EXPECT_EQ(rank(b, "", 10, "r1").top.back().score, 0.1 + 0.2) << "scores read back exactly";
}

TEST_F(LeaderboardTest, ASnapshotItCannotReadLeavesTheBoardEmpty) {
  Leaderboard& b = make(cfg_);  // no rounds
  for (const char* bad : {R"({})", R"([{"round":"r1","touched":1,"e":[["bob",2]]}])",
                          R"([{"round":"","e":[]}])"}) {
    simdjson::dom::parser parser;
    simdjson::dom::element rounds;
    ASSERT_FALSE(parser.parse(std::string(bad)).get(rounds));
    feed(b, {R"({"player":"ann","points":1})"});
    ASSERT_EQ(rank(b, "", 10).top.size(), 1u);
    bool restored = true;
    on_loop([&] {
      b.begin_rebuild();
      restored = b.restore(rounds);
      b.finish_rebuild();
    });
    EXPECT_FALSE(restored) << bad;
    EXPECT_TRUE(rank(b, "", 10).top.empty()) << bad;
  }
}

TEST_F(LeaderboardTest, PastTheRoundLimitTheLeastRecentlyChangedRoundGoes) {
  LeaderboardConfig cfg = cfg_;
  cfg.round = "match";
  Leaderboard& b = make(cfg);
  std::vector<std::string> bodies;
  for (size_t i = 0; i < Leaderboard::kMaxRounds; ++i) {
    bodies.push_back(R"({"player":"ann","points":1,"match":"r)" + std::to_string(i) + "\"}");
  }
  bodies.push_back(R"({"player":"ann","points":1,"match":"r0"})");   // r0 changed again: r1 is oldest
  bodies.push_back(R"({"player":"ann","points":1,"match":"new"})");  // one round too many
  feed(b, bodies);
  EXPECT_TRUE(rank(b, "", 1, "r1").top.empty());
  EXPECT_EQ(text(rank(b, "", 1, "r0").top), "ann:2:1");
  EXPECT_EQ(text(rank(b, "", 1, "r2").top), "ann:1:1");
  EXPECT_EQ(text(rank(b, "", 1, "new").top), "ann:1:1");
}

TEST_F(LeaderboardTest, AWatcherIsPushedItsRoundsBoardWithItsOwnEntry) {
  LeaderboardConfig cfg = cfg_;
  cfg.round = "match";
  cfg.interval_ms = 10;
  cfg.top = 1;
  Leaderboard& b = make(cfg);
  auto sink = std::make_shared<FakeSink>();
  feed(b, {R"({"player":"ann","points":50,"match":"r1"})", R"({"player":"bob","points":20,"match":"r1"})",
           R"({"player":"cid","points":99,"match":"r2"})"});
  on_loop([&] { b.watch("r1", sink, sink->conn_id(), "bob"); });

  // A fresh watcher gets the board at the next push although nothing changed.
  simdjson::dom::parser parser;
  simdjson::dom::element f;
  const std::string first = sink->wait_frame(1);
  ASSERT_FALSE(parser.parse(first).get(f)) << first;
  EXPECT_EQ(std::string_view(f["op"]), "board");
  EXPECT_EQ(std::string_view(f["ch"]), "lb:hunt:r1");
  EXPECT_EQ(std::string_view(f["board"]), "hunt");
  EXPECT_EQ(std::string_view(f["round"]), "r1");
  ASSERT_EQ(simdjson::dom::array(f["top"]).size(), 1u) << "top N of the config";
  EXPECT_EQ(std::string_view(f["top"].at(0)["m"]), "ann");
  EXPECT_EQ(std::string_view(f["me"]["m"]), "bob");
  EXPECT_EQ(int64_t(f["me"]["r"]), 2);

  // A change of its round is pushed again, with its entry moved.
  feed(b, {R"({"player":"bob","points":40,"match":"r1"})"});
  const std::string second = sink->wait_frame(2);
  ASSERT_FALSE(parser.parse(second).get(f)) << second;
  EXPECT_EQ(std::string_view(f["top"].at(0)["m"]), "bob");
  EXPECT_EQ(int64_t(f["me"]["s"]), 60);
  EXPECT_EQ(int64_t(f["me"]["r"]), 1);
}

}  // namespace
}  // namespace parley::events
