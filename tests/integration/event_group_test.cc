// Consumer groups over real sockets (PROTOCOL.md "Event streams and
// leaderboards", issue 12): partitions shared among members, rebalance with a
// generation on join, leave and disconnect, stale_generation, durable commits
// across kill -9, and a group under load with members coming and going: every
// offset committed exactly once, none lost.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/event_client.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTopics = R"(
[tenants.demo.topics.hunt]
partitions = 4
)";

ServerSpec spec() {
  ServerSpec s;
  s.tenants_toml = default_tenants_toml() + kTopics;
  s.unix_socket = true;
  return s;
}

std::string parts_of(const std::string& obj) { return json_raw(obj, "parts").value_or("?"); }

std::string consume(Client& c, int rid, const std::string& group = "g") {
  c.send(R"({"op":"consume","rid":)" + std::to_string(rid) + R"(,"topic":"hunt","group":")" + group + R"("})");
  return c.expect("assigned");
}

std::string commit_frame(int64_t rid, const std::string& group, int64_t gen, int64_t p, int64_t off) {
  return R"({"op":"commit","rid":)" + std::to_string(rid) + R"(,"topic":"hunt","group":")" + group +
         R"(","gen":)" + std::to_string(gen) + R"(,"p":)" + std::to_string(p) + R"(,"off":)" +
         std::to_string(off) + "}";
}

// Emits n events with keys spread over the partitions; returns the last offset per partition.
std::map<int64_t, int64_t> emit_some(Client& c, int n, const std::string& tag) {
  std::map<int64_t, int64_t> end;
  for (int i = 0; i < n; i += 10) {
    std::vector<TestEvent> evs;
    for (int k = i; k < i + 10 && k < n; ++k) {
      evs.push_back({"key-" + std::to_string(k % 13), tag + std::to_string(k), std::to_string(k)});
    }
    c.send(emit_frame("hunt", evs, i));
    for (auto [p, off] : emitted_offs(c.expect("emitted"))) end[p] = std::max(end[p], off);
  }
  return end;
}

class EventGroupTest : public SharedServerTest<EventGroupTest> {
 public:
  static ServerSpec server_spec() { return spec(); }
};

TEST_F(EventGroupTest, MembersShareThePartitionsAndRebalanceWithAGeneration) {
  auto a = game_server(*server_);
  const std::string first = consume(*a, 1, "share");
  EXPECT_EQ(json_int(first, "rid"), 1) << first;
  EXPECT_EQ(json_str(first, "group"), "share") << first;
  EXPECT_EQ(json_int(first, "gen"), 1) << first;
  EXPECT_EQ(parts_of(first), R"([{"p":0,"next":1},{"p":1,"next":1},{"p":2,"next":1},{"p":3,"next":1}])");

  // A second member: the first is revoked (its gen, all it held), then reassigned.
  auto b = game_server(*server_, Wire::kUnix);
  const std::string joined = consume(*b, 2, "share");
  EXPECT_EQ(json_int(joined, "gen"), 2) << joined;
  EXPECT_EQ(parts_of(joined), R"([{"p":1,"next":1},{"p":3,"next":1}])");
  auto revoked = a->next();
  ASSERT_TRUE(revoked);
  EXPECT_EQ(op_of(*revoked), "revoked") << *revoked;
  EXPECT_EQ(json_int(*revoked, "gen"), 1) << *revoked;
  EXPECT_EQ(json_raw(*revoked, "parts"), "[0,1,2,3]") << *revoked;
  auto reassigned = a->next();
  ASSERT_TRUE(reassigned);
  EXPECT_EQ(op_of(*reassigned), "assigned") << *reassigned;
  EXPECT_FALSE(json_raw(*reassigned, "rid")) << *reassigned;
  EXPECT_EQ(json_int(*reassigned, "gen"), 2) << *reassigned;
  EXPECT_EQ(parts_of(*reassigned), R"([{"p":0,"next":1},{"p":2,"next":1}])");

  // Events reach the member that holds their partition, marked with the group.
  auto gs = game_server(*server_);
  const auto end = emit_some(*gs, 40, "share-");
  ASSERT_EQ(end.size(), 4u);
  std::map<int64_t, int64_t> got_a, got_b;
  for (auto [c, got] : {std::pair{a.get(), &got_a}, std::pair{b.get(), &got_b}}) {
    const auto deadline = Clock::now() + 5s;
    auto done = [&, got = got] {
      if (got->size() != 2) return false;
      for (auto [p, off] : *got) {
        if (off != end.at(p)) return false;
      }
      return true;
    };
    while (!done() && Clock::now() < deadline) {
      auto f = c->next(1s);
      if (!f || op_of(*f) != "events") continue;
      EXPECT_EQ(json_str(*f, "group"), "share") << *f;
      std::vector<Delivered> evs;
      collect_events(*f, evs);
      for (const auto& d : evs) (*got)[d.p] = d.off;
    }
  }
  EXPECT_EQ(got_a.size(), 2u);
  EXPECT_EQ(got_b.size(), 2u);
  for (auto& [p, off] : got_a) EXPECT_TRUE(p == 0 || p == 2) << p;
  for (auto& [p, off] : got_b) EXPECT_TRUE(p == 1 || p == 3) << p;

  // Commits: the current gen and an assigned partition only.
  a->send(commit_frame(10, "share", 1, 0, 1));
  EXPECT_EQ(json_str(a->expect("error"), "code"), "stale_generation");
  a->send(commit_frame(11, "share", 2, 1, 1));
  EXPECT_EQ(json_str(a->expect("error"), "code"), "forbidden");
  a->send(commit_frame(12, "share", 2, 0, 1000));
  const std::string oor = a->expect("error");
  EXPECT_EQ(json_str(oor, "code"), "out_of_range") << oor;
  EXPECT_EQ(json_int(oor, "p"), 0) << oor;
  EXPECT_EQ(json_int(oor, "latest"), got_a[0] + 1) << oor;
  a->send(commit_frame(13, "nope", 2, 0, 1));
  EXPECT_EQ(json_str(a->expect("error"), "code"), "not_found");
  a->send(commit_frame(14, "share", 2, 9, 1));
  EXPECT_EQ(json_str(a->expect("error"), "code"), "not_found");
  auto outsider = game_server(*server_);
  outsider->send(commit_frame(15, "share", 2, 0, 1));
  EXPECT_EQ(json_str(outsider->expect("error"), "code"), "stale_generation");
  a->send(commit_frame(16, "share", 2, 0, got_a[0]));
  EXPECT_EQ(json_int(a->expect("committed"), "rid"), 16);

  // A second consume on one connection repeats the current assignment.
  const std::string again = consume(*a, 17, "share");
  EXPECT_EQ(json_int(again, "gen"), 2) << again;
  EXPECT_EQ(parts_of(again),
            R"([{"p":0,"next":)" + std::to_string(got_a[0] + 1) + R"(},{"p":2,"next":1}])");

  // b disconnects: a gets everything at gen 3, p0 after its commit.
  b->close();
  auto r3 = a->expect("revoked");
  EXPECT_EQ(json_int(r3, "gen"), 2) << r3;
  auto a3 = a->expect("assigned");
  EXPECT_EQ(json_int(a3, "gen"), 3) << a3;
  EXPECT_EQ(json_array_items(parts_of(a3)).size(), 4u) << a3;
  EXPECT_EQ(json_int(json_array_items(parts_of(a3))[0], "next"), got_a[0] + 1) << a3;

  // A member that leaves gets neither revoked nor assigned; the others rebalance.
  auto c = game_server(*server_);
  consume(*c, 20, "share");
  a->expect("assigned");  // gen 4
  c->send(R"({"op":"leave","rid":21,"topic":"hunt","group":"share"})");
  const std::string left = c->expect("left");
  EXPECT_EQ(json_str(left, "group"), "share") << left;
  EXPECT_EQ(json_int(a->expect("assigned"), "gen"), 5);
  EXPECT_FALSE(c->next(300ms).has_value());
}

TEST(EventGroupDurability, ARestartedGroupResumesFromItsCommit) {
  ServerProcess server(spec());
  server.start();
  auto gs = game_server(server);
  const auto end = emit_some(*gs, 200, "d-");
  auto m = game_server(server);
  const std::string assigned = consume(*m, 1, "durable");
  const int64_t gen = json_int(assigned, "gen").value_or(0);
  std::map<int64_t, int64_t> committed;
  int rid = 2;
  for (auto [p, last] : end) {
    committed[p] = last / 2;
    m->send(commit_frame(rid++, "durable", gen, p, committed[p]));
    ASSERT_FALSE(m->expect("committed").empty());
  }
  server.kill9();
  server.restart();
  auto again = game_server(server);
  const std::string resumed = consume(*again, 1, "durable");
  EXPECT_EQ(json_int(resumed, "gen"), 1) << resumed;
  for (const auto& part : json_array_items(parts_of(resumed))) {
    const int64_t p = json_int(part, "p").value_or(-1);
    EXPECT_EQ(json_int(part, "next"), committed[p] + 1) << resumed;
  }
  // Delivery starts at the commit + 1 and runs to the end with no gap.
  std::map<int64_t, int64_t> last;
  const auto deadline = Clock::now() + 10s;
  size_t want = 0, have = 0;
  for (auto [p, e] : end) want += static_cast<size_t>(e - committed[p]);
  while (have < want && Clock::now() < deadline) {
    auto f = again->next(1s);
    if (!f || op_of(*f) != "events") continue;
    std::vector<Delivered> evs;
    collect_events(*f, evs);
    for (const auto& d : evs) {
      const int64_t expect = last.count(d.p) ? last[d.p] + 1 : committed[d.p] + 1;
      ASSERT_EQ(d.off, expect) << "partition " << d.p;
      last[d.p] = d.off;
      ++have;
    }
  }
  EXPECT_EQ(have, want);
}

// Members join, leave and drop while a producer emits; each processes its
// events and commits after each frame. The committed ranges of the acknowledged
// commits must tile 1..end of every partition: no offset committed twice (a
// stale member's commit is refused) and none skipped.
TEST(EventGroupLoad, RebalancesUnderLoadCommitEveryOffsetExactlyOnce) {
  ServerProcess server(spec());
  server.start();
  std::mutex mu;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> ranges;  // p -> acked [lo, hi]
  std::atomic<int> gaps{0}, stale{0}, other_errors{0};

  struct Member {
    std::thread thread;
    std::atomic<bool> stop{false};
  };
  auto run_member = [&](Member* self, int id) {
    auto c = game_server(server, id % 2 ? Wire::kUnix : Wire::kTcp);
    c->send(R"({"op":"consume","rid":"c","topic":"hunt","group":"load"})");
    int64_t gen = 0;
    std::map<int64_t, int64_t> expected, lo;  // per assigned partition
    std::map<int64_t, std::tuple<int64_t, int64_t, int64_t>> pending;  // rid -> p, lo, hi
    // Commits are sent 30 ms after their events came (processing takes time), so
    // rebalances catch some in flight with the old gen.
    std::deque<std::pair<Clock::time_point, std::string>> outbox;
    int64_t rid = 0;
    while (!self->stop) {
      while (!outbox.empty() && outbox.front().first <= Clock::now()) {
        c->send(outbox.front().second);
        outbox.pop_front();
      }
      auto f = c->next(5ms);
      if (!f) continue;
      const std::string op = op_of(*f);
      if (op == "assigned") {
        gen = json_int(*f, "gen").value_or(0);
        expected.clear();
        lo.clear();
        for (const auto& part : json_array_items(parts_of(*f))) {
          const int64_t p = json_int(part, "p").value_or(-1);
          expected[p] = lo[p] = json_int(part, "next").value_or(-1);
        }
      } else if (op == "revoked") {
        expected.clear();
      } else if (op == "events") {
        std::vector<Delivered> evs;
        collect_events(*f, evs);
        if (evs.empty()) continue;
        const int64_t p = evs.front().p;
        if (!expected.count(p) || evs.front().off != expected[p]) {
          ++gaps;
          continue;
        }
        expected[p] = evs.back().off + 1;
        pending[++rid] = {p, lo[p], evs.back().off};
        lo[p] = evs.back().off + 1;
        outbox.emplace_back(Clock::now() + 30ms, commit_frame(rid, "load", gen, p, evs.back().off));
      } else if (op == "committed") {
        auto it = pending.find(json_int(*f, "rid").value_or(-1));
        if (it == pending.end()) continue;
        auto [p, from, to] = it->second;
        std::lock_guard lock(mu);
        ranges[p].emplace_back(from, to);
        pending.erase(it);
      } else if (op == "error") {
        const std::string code = json_str(*f, "code").value_or("");
        pending.erase(json_int(*f, "rid").value_or(-1));
        if (code == "stale_generation" || code == "forbidden") {
          ++stale;
        } else {
          ADD_FAILURE() << *f;
          ++other_errors;
        }
      }
    }
    // Before going: the replies to the commits already sent (a commit the
    // server took counts even if its sender then leaves); the outbox is dropped.
    for (size_t k = 0; k < outbox.size(); ++k) pending.erase(rid - static_cast<int64_t>(k));
    const auto until = Clock::now() + 5s;
    while (!pending.empty() && Clock::now() < until) {
      auto f = c->next(50ms);
      if (!f) continue;
      const int64_t r = json_int(*f, "rid").value_or(-1);
      auto it = pending.find(r);
      if (it == pending.end()) continue;
      if (op_of(*f) == "committed") {
        auto [p, from, to] = it->second;
        std::lock_guard lock(mu);
        ranges[p].emplace_back(from, to);
      } else {
        ++stale;
      }
      pending.erase(it);
    }
    if (id % 3 == 0) {
      c->send(R"({"op":"leave","rid":"bye","topic":"hunt","group":"load"})");
      c->expect("left");
    }
    c->close();
  };

  std::vector<std::unique_ptr<Member>> members;
  int next_id = 0;
  auto add = [&] {
    auto m = std::make_unique<Member>();
    Member* raw = m.get();
    const int id = next_id++;
    m->thread = std::thread([&, raw, id] { run_member(raw, id); });
    members.push_back(std::move(m));
  };
  for (int i = 0; i < 3; ++i) add();

  // The producer: 10,000 events in emits of 20, eight in flight.
  std::map<int64_t, int64_t> end;
  std::thread producer([&] {
    auto gs = game_server(server);
    int sent = 0, answered = 0;
    while (answered < 500) {
      while (sent < 500 && sent - answered < 8) {
        std::vector<TestEvent> evs;
        for (int k = 0; k < 20; ++k) evs.push_back({"key-" + std::to_string((sent * 20 + k) % 31), "", "1"});
        gs->send(emit_frame("hunt", evs, sent++));
      }
      const std::string r = gs->expect("emitted", 10s);
      if (r.empty()) return;
      for (auto [p, off] : emitted_offs(r)) end[p] = std::max(end[p], off);
      ++answered;
    }
  });
  // Churn while it runs: every 150 ms one member goes (leave or drop), one comes.
  for (int round = 0; round < 12; ++round) {
    std::this_thread::sleep_for(150ms);
    members[round]->stop = true;
    add();
  }
  producer.join();
  ASSERT_EQ(end.size(), 4u);
  // The members left keep consuming until every offset is committed.
  const auto deadline = Clock::now() + 30s;
  auto covered = [&] {
    std::lock_guard lock(mu);
    for (auto [p, e] : end) {
      int64_t n = 0;
      for (auto [a, b] : ranges[p]) n += b - a + 1;
      if (n < e) return false;
    }
    return true;
  };
  while (!covered() && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  for (auto& m : members) m->stop = true;
  for (auto& m : members) m->thread.join();

  EXPECT_EQ(gaps.load(), 0) << "a member saw a gap inside its assignment";
  EXPECT_EQ(other_errors.load(), 0);
  for (auto [p, e] : end) {
    auto rs = ranges[p];
    std::sort(rs.begin(), rs.end());
    int64_t at = 1;
    for (auto [a, b] : rs) {
      ASSERT_EQ(a, at) << "partition " << p << ": " << (a < at ? "committed twice" : "skipped")
                       << " at " << std::min(a, at);
      at = b + 1;
    }
    EXPECT_EQ(at, e + 1) << "partition " << p << " not fully committed";
  }
  std::printf("group under load: 10000 events, 15 members over time, %d commits refused as stale\n",
              stale.load());
}

}  // namespace
}  // namespace parley::testing
