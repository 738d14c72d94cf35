// Event topics served by several `parley serve` processes on one Valkey (issues
// 10 and 12): partition p of topic T is the store channel "T\x1fp" and takes the
// channels' cross-node path (the script assigns offsets and dedupes, its feed
// tells every node). Emits on either node land in one gap-free order per
// partition, a tail on either node sees every node's events in that order, a
// retry on the other node is a dup with the original offset; a consumer group
// stays on one node, and a member on a second node is refused
// (`unavailable`, retryable, "served by another node") until the first node lets
// it go (its last member leaves, or it dies and its hold lapses: the next node
// starts from its commits).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/event_client.h"
#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

ServerSpec node_spec(const std::vector<std::string>& nodes, bool cluster = false) {
  ServerSpec s;
  s.tenants_toml = default_tenants_toml() + R"(
[tenants.demo.topics.hunt]
partitions = 4

[tenants.demo.leaderboards.points]
topic = "hunt"
type = "score"
member = "player"
score = "points"
agg = "sum"
top = 20
interval_ms = 100
)";
  s.store = "valkey";
  s.tenants_toml += "\n" + valkey_toml(nodes, cluster);
  return s;
}

void start_tail(Client& c, const std::string& from = "earliest") {
  c.send(R"({"op":"tail","rid":"t","topic":"hunt","from":")" + from + R"("})");
  ASSERT_FALSE(c.expect("tailing").empty());
}

// Emits `n` events (ids <tag><i>, keys spread over the partitions) in batches of
// 10, one batch in flight; returns id -> (p, off) for what was acknowledged and
// counts error answers.
std::map<std::string, std::pair<int64_t, int64_t>> emit_n(Client& c, int n, const std::string& tag,
                                                          int* errors) {
  std::map<std::string, std::pair<int64_t, int64_t>> acked;
  for (int i = 0; i < n; i += 10) {
    std::vector<TestEvent> evs;
    for (int k = i; k < i + 10 && k < n; ++k) {
      evs.push_back({"key-" + std::to_string(k % 13), tag + std::to_string(k), std::to_string(k)});
    }
    c.send(emit_frame("hunt", evs, i));
    std::optional<std::string> f;
    do {
      f = c.next(5s);
    } while (f && op_of(*f) != "emitted" && op_of(*f) != "error");
    if (!f || op_of(*f) != "emitted") {
      ++*errors;
      continue;
    }
    const auto offs = emitted_offs(*f);
    for (size_t k = 0; k < offs.size() && k < evs.size(); ++k) acked[evs[k].id] = offs[k];
  }
  return acked;
}

void two_nodes_emit_and_tail(RedisServer& redis_for_flush, const std::vector<std::string>& nodes,
                             bool cluster) {
  ServerProcess a(node_spec(nodes, cluster));
  ServerProcess b(node_spec(nodes, cluster));
  a.start();
  b.start();
  // Tails on both nodes before anything is emitted: they learn of the other
  // node's events only through the store's feed.
  auto ta = game_server(a), tb = game_server(b);
  start_tail(*ta);
  start_tail(*tb);

  constexpr int kN = 200;
  auto pa = game_server(a), pb = game_server(b);
  int ea = 0, eb = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> aa, ab;
  std::thread t1([&] { aa = emit_n(*pa, kN, "a", &ea); });
  std::thread t2([&] { ab = emit_n(*pb, kN, "b", &eb); });
  t1.join();
  t2.join();
  EXPECT_EQ(ea, 0);
  EXPECT_EQ(eb, 0);
  ASSERT_EQ(aa.size() + ab.size(), size_t{2 * kN});
  // One order: no two acknowledged events share an offset.
  std::set<std::pair<int64_t, int64_t>> places;
  for (const auto* m : {&aa, &ab}) {
    for (const auto& [id, at] : *m) EXPECT_TRUE(places.insert(at).second) << id << " shares " << at.second;
  }

  for (auto* t : {ta.get(), tb.get()}) {
    const std::string who = t == ta.get() ? "tail on a" : "tail on b";
    const auto got = read_events(*t, 2 * kN);
    EXPECT_EQ(got.size(), size_t{2 * kN}) << who;
    expect_gap_free(got, who);
    for (const auto& d : got) {
      const auto& m = d.id[0] == 'a' ? aa : ab;
      auto it = m.find(d.id);
      ASSERT_NE(it, m.end()) << who << " got " << d.id;
      EXPECT_EQ(it->second, std::make_pair(d.p, d.off)) << who << " " << d.id;
    }
  }

  // A producer's retry through the other node: dups with the original offsets.
  std::vector<TestEvent> again;
  for (int k = 0; k < 10; ++k) again.push_back({"key-" + std::to_string(k % 13), "a" + std::to_string(k), std::to_string(k)});
  pb->send(emit_frame("hunt", again, 99));
  const std::string e = pb->expect("emitted");
  const auto offs = emitted_offs(e);
  ASSERT_EQ(offs.size(), again.size()) << e;
  for (size_t k = 0; k < offs.size(); ++k) EXPECT_EQ(offs[k], aa["a" + std::to_string(k)]) << e;
  for (bool d : emitted_dups(e)) EXPECT_TRUE(d) << e;

  // A tail opened later on the other node reads the whole log back in order.
  auto late = game_server(b, Wire::kTcp);
  start_tail(*late);
  const auto all = read_events(*late, 2 * kN);
  EXPECT_EQ(all.size(), size_t{2 * kN});
  expect_gap_free(all, "late tail on b");
  (void)redis_for_flush;
}

TEST(EventsAcrossNodes, EmitsOnTwoNodesMakeOneOrderThatTailsOnBothSee) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  two_nodes_emit_and_tail(redis, {redis.address()}, false);
}

TEST(EventsAcrossNodes, OnTheThreeMasterCluster) {
  RedisCluster& cluster = shared_redis_cluster();
  ASSERT_TRUE(cluster.ok()) << cluster.why();
  cluster.flush_all();
  two_nodes_emit_and_tail(shared_redis(), cluster.addresses(), true);
}

void group_on_one_node(const std::vector<std::string>& nodes, bool cluster) {
  ServerProcess a(node_spec(nodes, cluster));
  ServerProcess b(node_spec(nodes, cluster));
  a.start();
  b.start();
  auto m1 = game_server(a);
  m1->send(R"({"op":"consume","rid":1,"topic":"hunt","group":"g"})");
  const std::string assigned = m1->expect("assigned");
  EXPECT_EQ(json_raw(assigned, "parts").value_or(""),
            R"([{"p":0,"next":1},{"p":1,"next":1},{"p":2,"next":1},{"p":3,"next":1}])");

  // The group is held by node a: a member on node b gets a clear error, not a
  // second assignment of the same partitions.
  auto m2 = game_server(b);
  m2->send(R"({"op":"consume","rid":2,"topic":"hunt","group":"g"})");
  const std::string refused = m2->expect("error");
  EXPECT_EQ(json_str(refused, "code"), "unavailable") << refused;
  EXPECT_NE(json_str(refused, "msg").value_or("").find("another node"), std::string::npos) << refused;
  EXPECT_EQ(json_int(refused, "rid"), 2) << refused;
  // Another group is free on node b.
  m2->send(R"({"op":"consume","rid":3,"topic":"hunt","group":"other"})");
  EXPECT_FALSE(m2->expect("assigned").empty());

  // Events emitted on node b reach the group's member on node a.
  auto pb = game_server(b);
  int errors = 0;
  const auto acked = emit_n(*pb, 40, "x", &errors);
  EXPECT_EQ(errors, 0);
  const auto got = read_events(*m1, 40);
  EXPECT_EQ(got.size(), 40u);
  expect_gap_free(got, "member on a");

  // Once the group has no member on node a, node b may take it (after the hold
  // lapses: the member's leave releases it at once).
  m1->send(R"({"op":"leave","rid":4,"topic":"hunt","group":"g"})");
  m1->expect("left");
  const auto deadline = Clock::now() + 20s;
  std::string answer;
  for (int rid = 10; Clock::now() < deadline; ++rid) {
    m2->send(R"({"op":"consume","rid":)" + std::to_string(rid) + R"(,"topic":"hunt","group":"g"})");
    std::optional<std::string> f;
    do {
      f = m2->next(5s);
    } while (f && op_of(*f) != "assigned" && op_of(*f) != "error");
    answer = f.value_or("");
    if (op_of(answer) == "assigned" && json_int(answer, "rid") == rid) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(op_of(answer), "assigned") << answer;
}

TEST(EventsAcrossNodes, AConsumerGroupStaysOnOneNodeAndASecondNodeIsRefused) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  group_on_one_node({redis.address()}, false);
}

TEST(EventsAcrossNodes, AConsumerGroupStaysOnOneNodeOnTheThreeMasterCluster) {
  RedisCluster& cluster = shared_redis_cluster();
  ASSERT_TRUE(cluster.ok()) << cluster.why();
  cluster.flush_all();
  group_on_one_node(cluster.addresses(), true);
}

TEST(EventsAcrossNodes, AGroupHeldByANodeThatDiesMovesToAnotherWithItsCommits) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerProcess a(node_spec({redis.address()}));
  ServerProcess b(node_spec({redis.address()}));
  a.start();
  b.start();
  auto pb = game_server(b);
  int errors = 0;
  emit_n(*pb, 40, "k", &errors);
  ASSERT_EQ(errors, 0);
  auto m1 = game_server(a);
  m1->send(R"({"op":"consume","rid":1,"topic":"hunt","group":"g"})");
  const int64_t gen = json_int(m1->expect("assigned"), "gen").value_or(0);
  const auto got = read_events(*m1, 40);
  ASSERT_EQ(got.size(), 40u);
  std::map<int64_t, int64_t> last;
  for (const auto& d : got) last[d.p] = std::max(last[d.p], d.off);
  for (const auto& [p, off] : last) {
    m1->send(R"({"op":"commit","rid":2,"topic":"hunt","group":"g","gen":)" + std::to_string(gen) +
             R"(,"p":)" + std::to_string(p) + R"(,"off":)" + std::to_string(off) + "}");
    m1->expect("committed");
  }
  a.kill9();
  const auto killed = Clock::now();
  // Node b takes the group once a's hold lapses (kGroupHoldMs, 15 s), and reads
  // a's commits: every partition starts after what a's member committed.
  auto m2 = game_server(b);
  std::string answer;
  bool refused_first = false;
  for (int rid = 10; Clock::now() < killed + 30s; ++rid) {
    m2->send(R"({"op":"consume","rid":)" + std::to_string(rid) + R"(,"topic":"hunt","group":"g"})");
    std::optional<std::string> f;
    do {
      f = m2->next(5s);
    } while (f && op_of(*f) != "assigned" && op_of(*f) != "error");
    answer = f.value_or("");
    if (op_of(answer) == "assigned") break;
    if (rid == 10) refused_first = json_str(answer, "code") == "unavailable";
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(refused_first);
  ASSERT_EQ(op_of(answer), "assigned") << answer;
  EXPECT_LT(Clock::now() - killed, 20s);
  for (const auto& part : json_array_items(json_raw(answer, "parts").value_or(""))) {
    const int64_t p = json_int(part, "p").value_or(-1);
    EXPECT_EQ(json_int(part, "next").value_or(0), last[p] + 1) << answer;
  }
}

TEST(EventsAcrossNodes, LeaderboardsOnEveryNodeCountEveryNodesEvents) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerProcess a(node_spec({redis.address()}));
  ServerProcess b(node_spec({redis.address()}));
  a.start();
  b.start();
  std::map<std::string, int> sums;
  for (auto* node : {&a, &b}) {
    auto gs = game_server(*node);
    for (int i = 0; i < 200; i += 20) {
      std::vector<TestEvent> evs;
      for (int k = i; k < i + 20; ++k) {
        const std::string player = "p" + std::to_string(k % 10);
        const int points = k % 7 + (node == &a ? 1 : 100);
        sums[player] += points;
        evs.push_back({player, "", R"({"player":")" + player + R"(","points":)" + std::to_string(points) + "}",
                       "score"});
      }
      gs->send(emit_frame("hunt", evs, i));
      gs->expect("emitted");
    }
  }
  // Each node's board holds both nodes' events (the other's come through the feed).
  for (auto* node : {&a, &b}) {
    auto c = game_server(*node);
    for (const std::string m : {"p0", "p3", "p9"}) {
      std::string want = "\"m\":\"" + m + "\",\"s\":" + std::to_string(sums[m]) + ",";
      std::string entries;
      const auto deadline = Clock::now() + 10s;
      do {
        c->send(R"({"op":"rank","rid":1,"board":"points","member":")" + m + R"(","around":0})");
        entries = json_raw(c->expect("ranks"), "entries").value_or("");
        if (entries.find(want) != std::string::npos) break;
        std::this_thread::sleep_for(100ms);
      } while (Clock::now() < deadline);
      EXPECT_NE(entries.find(want), std::string::npos) << (node == &a ? "node a: " : "node b: ") << entries
                                                        << " want " << want;
    }
  }
}

}  // namespace
}  // namespace parley::testing
