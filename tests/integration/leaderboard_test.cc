// Leaderboards over real sockets (PROTOCOL.md "Event streams and
// leaderboards", issue 12): `rank` and the pushed boards against a brute-force
// recomputation from the acknowledged events, rounds, `me`, and the board
// rebuilt from the topic after kill -9.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "integration/event_client.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kBoards = R"(
[tenants.demo.topics.hunt]
partitions = 4

[tenants.demo.leaderboards.hunt]
topic = "hunt"
type = "score"
member = "player"
score = "points"
agg = "sum"
top = 5
interval_ms = 100

[tenants.demo.leaderboards.best]
topic = "hunt"
type = "score"
member = "player"
score = "points"
agg = "max"
order = "asc"
round = "round"
top = 3
interval_ms = 100
)";

ServerSpec spec() {
  ServerSpec s;
  s.tenants_toml = default_tenants_toml() + kBoards;
  s.unix_socket = true;
  return s;
}

// What PROTOCOL.md says a board holds, recomputed from every event.
struct Brute {
  bool sum = true;  // else max
  bool desc = true;
  std::map<std::string, double> scores;
  void apply(const std::string& m, double s) {
    auto [it, fresh] = scores.emplace(m, s);
    if (!fresh) it->second = sum ? it->second + s : std::max(it->second, s);
  }
  // [m, s, r] in rank order.
  std::vector<std::tuple<std::string, double, int64_t>> ranked() const {
    std::vector<std::pair<std::string, double>> all(scores.begin(), scores.end());
    std::sort(all.begin(), all.end(), [this](auto& a, auto& b) {
      if (a.second != b.second) return desc ? a.second > b.second : a.second < b.second;
      return a.first < b.first;
    });
    std::vector<std::tuple<std::string, double, int64_t>> out;
    for (auto& [m, s] : all) {
      int64_t better = 0;
      for (auto& [m2, s2] : all) better += desc ? s2 > s : s2 < s;
      out.emplace_back(m, s, better + 1);
    }
    return out;
  }
  // The entries `rank` should answer for m with `around`, as JSON.
  std::string around_json(const std::string& m, size_t around) const {
    auto all = ranked();
    size_t i = 0;
    while (i < all.size() && std::get<0>(all[i]) != m) ++i;
    if (i == all.size()) return "[]";
    std::string out = "[";
    for (size_t k = i >= around ? i - around : 0; k < all.size() && k <= i + around; ++k) {
      if (out.size() > 1) out += ',';
      out += entry_json(all[k]);
    }
    return out + "]";
  }
  std::string top_json(size_t n) const {
    auto all = ranked();
    std::string out = "[";
    for (size_t k = 0; k < all.size() && k < n; ++k) {
      if (out.size() > 1) out += ',';
      out += entry_json(all[k]);
    }
    return out + "]";
  }
  static std::string entry_json(const std::tuple<std::string, double, int64_t>& e) {
    char s[32];
    std::snprintf(s, sizeof s, "%g", std::get<1>(e));
    return R"({"m":")" + std::get<0>(e) + R"(","s":)" + s + R"(,"r":)" +
           std::to_string(std::get<2>(e)) + "}";
  }
};

std::string rank_frame(const std::string& board, const std::string& member, int around,
                       const std::string& round_field = "") {
  return R"({"op":"rank","rid":1,"board":")" + board + R"(","member":")" + member +
         R"(","around":)" + std::to_string(around) + round_field + "}";
}

// Emits `n` random events (mostly scores, some of another type, some unusable),
// applying the usable ones to `brute` (and to `best` per round).
void emit_scores(Client& c, std::mt19937& rng, int n, Brute& brute,
                 std::map<std::string, Brute>* best = nullptr, const std::string& topic = "hunt") {
  for (int i = 0; i < n; i += 20) {
    std::vector<TestEvent> evs;
    for (int k = 0; k < 20; ++k) {
      const std::string player = "p" + std::to_string(rng() % 40);
      const int points = static_cast<int>(rng() % 30) - 5;
      const std::string round = "r" + std::to_string(rng() % 2);
      switch (rng() % 10) {
        case 0:  // another type: not on the board
          evs.push_back({player, "", R"({"player":")" + player + R"(","points":1000})", "pick"});
          continue;
        case 1:  // a score that is not a number: ignored
          evs.push_back({player, "", R"({"player":")" + player + R"(","points":"9","round":"r0"})", "score"});
          continue;
        case 2:  // no member: ignored
          evs.push_back({player, "", R"({"points":7,"round":"r1"})", "score"});
          continue;
        default:
          evs.push_back({player, "",
                         R"({"player":")" + player + R"(","points":)" + std::to_string(points) +
                             R"(,"round":")" + round + R"("})",
                         "score"});
          brute.apply(player, points);
          // `best` is a max board, ascending.
          if (best) best->try_emplace(round, Brute{false, false, {}}).first->second.apply(player, points);
      }
    }
    c.send(emit_frame(topic, evs, i));
    ASSERT_FALSE(c.expect("emitted").empty());
  }
}

TEST(Leaderboard, RankAndPushesMatchABruteForceRecomputationAndSurviveARestart) {
  ServerProcess server(spec());
  server.start();
  std::mt19937 rng(12);
  Brute sum;
  std::map<std::string, Brute> best;
  auto gs = game_server(server, Wire::kUnix);
  emit_scores(*gs, rng, 2000, sum, &best);

  auto check = [&](Client& c) {
    for (const std::string m : {"p0", "p7", "p13", "p39"}) {
      c.send(rank_frame("hunt", m, 3));
      const std::string r = c.expect("ranks");
      EXPECT_EQ(json_str(r, "board"), "hunt") << r;
      EXPECT_EQ(json_raw(r, "entries"), sum.around_json(m, 3)) << r;
      EXPECT_NE(json_raw(r, "entries"), "[]") << r;
      for (const std::string round : {"r0", "r1"}) {
        c.send(rank_frame("best", m, 2, R"(,"round":")" + round + "\""));
        const std::string b = c.expect("ranks");
        EXPECT_EQ(json_str(b, "round"), round) << b;
        EXPECT_EQ(json_raw(b, "entries"), best[round].around_json(m, 2)) << b;
      }
    }
  };
  auto player = connect_as(server.http_port(), "p7");
  check(*player);

  // Bad and empty asks.
  player->send(rank_frame("best", "p7", 2));
  EXPECT_EQ(json_str(player->expect("error"), "code"), "bad_request");
  player->send(rank_frame("best", "p7", 2, R"(,"round":"r9")"));
  EXPECT_EQ(json_raw(player->expect("ranks"), "entries"), "[]");
  player->send(rank_frame("hunt", "nobody", 2));
  EXPECT_EQ(json_raw(player->expect("ranks"), "entries"), "[]");

  // Pushes: a connection that joins the channel gets the board at the next
  // interval, with its own entry as `me`; a change is pushed to everyone.
  player->join("lb:hunt");
  const std::string first = player->expect("board", 2s);
  EXPECT_EQ(json_str(first, "ch"), "lb:hunt") << first;
  EXPECT_EQ(json_raw(first, "top"), sum.top_json(5)) << first;
  const auto ranked = sum.ranked();
  auto me = std::find_if(ranked.begin(), ranked.end(), [](auto& e) { return std::get<0>(e) == "p7"; });
  ASSERT_NE(me, ranked.end());
  EXPECT_EQ(json_raw(first, "me"), Brute::entry_json(*me)) << first;
  EXPECT_FALSE(player->expect("board", 300ms).size()) << "pushed again with nothing changed";

  auto r1 = connect_as(server.http_port(), "p1");
  r1->join("lb:best:r1");
  const std::string round_push = r1->expect("board", 2s);
  EXPECT_EQ(json_str(round_push, "round"), "r1") << round_push;
  EXPECT_EQ(json_raw(round_push, "top"), best["r1"].top_json(3)) << round_push;

  // 50 more points for p7: the push follows, every interval_ms at most.
  gs->send(emit_frame("hunt", {{"p7", "", R"({"player":"p7","points":50,"round":"r0"})", "score"}}, 99));
  ASSERT_FALSE(gs->expect("emitted").empty());
  sum.apply("p7", 50);
  best.try_emplace("r0", Brute{false, false, {}}).first->second.apply("p7", 50);
  const auto sent = Clock::now();
  const std::string pushed = player->expect("board", 2s);
  EXPECT_LT(Clock::now() - sent, 500ms);
  EXPECT_EQ(json_raw(pushed, "top"), sum.top_json(5)) << pushed;
  EXPECT_TRUE(json_raw(pushed, "me").value_or("").find(R"("m":"p7")") != std::string::npos) << pushed;
  EXPECT_FALSE(r1->expect("board", 300ms).size()) << "round r1 did not change";
  check(*player);

  // The HTTP API answers the same board.
  auto h = http_request(server.http_port(), "GET", "/v1/leaderboards/hunt?around=p7&top=3", "",
                        kDemoApiKey);
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(json_raw(h.body, "top"), sum.top_json(3)) << h.body;
  EXPECT_EQ(json_raw(h.body, "entries"), sum.around_json("p7", 5)) << h.body;
  h = http_request(server.http_port(), "GET", "/v1/leaderboards/best?around=p7", "", kDemoApiKey);
  EXPECT_EQ(h.status, 400) << h.body;  // round required
  h = http_request(server.http_port(), "GET", "/v1/leaderboards/best?round=r1", "", kDemoApiKey);
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(json_raw(h.body, "top"), best["r1"].top_json(3)) << h.body;
  EXPECT_EQ(json_raw(h.body, "entries"), "[]") << h.body;
  EXPECT_EQ(http_request(server.http_port(), "GET", "/v1/leaderboards/nope", "", kDemoApiKey).status, 404);

  // After kill -9 the boards are rebuilt from the topic.
  server.kill9();
  server.restart();
  auto again = connect_as(server.http_port(), "p9");
  check(*again);
}

// Snapshots (topic.h): a topic that keeps ~300 events per partition, its
// boards snapshotted every second.
constexpr const char* kSnapshotBoards = R"(
[tenants.demo.topics.snap]
partitions = 2
retention = 300
snapshot_s = 1

[tenants.demo.leaderboards.snapsum]
topic = "snap"
type = "score"
member = "player"
score = "points"
agg = "sum"
top = 5

[tenants.demo.leaderboards.snapbest]
topic = "snap"
type = "score"
member = "player"
score = "points"
agg = "max"
order = "asc"
round = "round"
top = 3
)";

TEST(Leaderboard, ARestartLoadsTheNewestSnapshotAndReplaysOnlyTheEventsAfterIt) {
  ServerSpec s;
  s.tenants_toml = default_tenants_toml() + kSnapshotBoards;
  s.unix_socket = true;
  ServerProcess server(s);
  server.start();
  std::mt19937 rng(99);
  Brute sum;
  std::map<std::string, Brute> best;
  auto gs = game_server(server, Wire::kUnix);
  emit_scores(*gs, rng, 3000, sum, &best, "snap");
  std::this_thread::sleep_for(2500ms);  // a snapshot of all of it is written
  // The tail: acknowledged after the snapshot, so only the topic has them.
  emit_scores(*gs, rng, 200, sum, &best, "snap");
  gs.reset();

  server.kill9();
  server.restart();
  auto c = connect_as(server.http_port(), "p3");
  for (int i = 0; i < 40; ++i) {
    const std::string m = "p" + std::to_string(i);
    c->send(rank_frame("snapsum", m, 2));
    const std::string r = c->expect("ranks");
    EXPECT_EQ(json_raw(r, "entries"), sum.around_json(m, 2)) << r;
    for (const std::string round : {"r0", "r1"}) {
      c->send(rank_frame("snapbest", m, 1, R"(,"round":")" + round + "\""));
      const std::string b = c->expect("ranks");
      EXPECT_EQ(json_raw(b, "entries"), best[round].around_json(m, 1)) << b;
    }
  }
  // The boards above include ~1,500 events per partition while the topic's first
  // kept offset is ~300 from its end: a rebuild from the topic alone replays only
  // those (with snapshot_s = 0 this test fails), so they came from the snapshot.

  // A second kill -9 with nothing new: the same snapshot, the same boards.
  server.kill9();
  server.restart();
  auto again = connect_as(server.http_port(), "p3");
  again->send(rank_frame("snapsum", "p3", 2));
  EXPECT_EQ(json_raw(again->expect("ranks"), "entries"), sum.around_json("p3", 2));
}

}  // namespace
}  // namespace parley::testing
