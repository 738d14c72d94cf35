// Durability (PROTOCOL.md "Client ops"): an ack is sent only after the message is
// sequenced, checked for duplicates and appended to the log. So a server killed
// with SIGKILL while clients publish keeps every acknowledged message with its seq
// and body, its seqs stay gap-free, nothing is stored twice, and a client retrying
// its unacknowledged pubs after the restart gets each stored once. A namespace
// with durable = false keeps the same rules in memory only.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// No rate limits; `log` keeps every message a test writes reachable by history.
constexpr const char* kTenantExtra =
    "publish_per_sec = 0\npublish_per_conn_sec = 0\n"
    "\n[tenants.demo.namespaces.log]\nhistory = 1000000\n";

constexpr size_t kWindow = 64;               // pubs in flight per publisher
constexpr size_t kMaxPerPublisher = 200000;  // a bound; a run ends far earlier

ServerSpec spec(const std::string& server_extra = "") {
  return spec_with_tenants(default_tenants_toml(kTenantExtra), server_extra);
}

std::string body_of(const std::string& id) {
  return R"({"id":")" + id + R"(","pad":"0123456789abcdef0123456789abcdef"})";
}

std::string key_of(const std::string& msg) {
  return json_str(msg, "from").value_or("") + "/" + json_str(msg, "id").value_or("");
}

// Empty when `history` holds seqs 1..n in order and no (from, id) twice; else the first problem.
std::string gap_or_duplicate(const std::vector<std::string>& history) {
  std::set<std::string> keys;
  for (size_t i = 0; i < history.size(); ++i) {
    if (json_int(history[i], "seq") != static_cast<int64_t>(i + 1)) {
      return "stored message #" + std::to_string(i + 1) + " is " + history[i];
    }
    if (!keys.insert(key_of(history[i])).second) return "stored twice: " + history[i];
  }
  return "";
}

// One publishing client on its own thread: keeps kWindow pubs with unique ids in
// flight and records what was sent and what was acknowledged.
struct Publisher {
  std::string user;
  Wire wire = Wire::kWebSocket;
  std::vector<std::string> sent;          // ids, in send order
  std::map<std::string, int64_t> acked;   // id -> seq
  std::vector<std::string> errors;

  // Publishes until the connection closes (the server died) or a bound is hit.
  void run(const ServerProcess& server, const std::string& ch, std::atomic<size_t>& acked_total) {
    auto c = Client::connect(server.port(wire), wire);
    const std::string welcome = c->hello(ServerProcess::token(user));
    const std::string joined = op_of(welcome) == "welcome" ? c->join(ch) : "";
    if (op_of(joined) != "joined") {
      errors.push_back("could not join: hello got '" + welcome + "', join got '" + joined + "'");
      return;
    }
    size_t inflight = 0;
    const auto deadline = Clock::now() + 30s;
    while (Clock::now() < deadline) {
      while (inflight < kWindow && sent.size() < kMaxPerPublisher && !c->closed()) {
        sent.push_back(user + "-" + std::to_string(sent.size()));
        c->send(pub_frame(ch, sent.back(), body_of(sent.back()), sent.size() - 1));
        ++inflight;
      }
      auto o = c->next(1s);
      if (!o) {
        if (c->closed()) return;
        continue;
      }
      const std::string op = op_of(*o);
      if (op == "ack") {
        acked[json_str(*o, "id").value_or("")] = json_int(*o, "seq").value_or(0);
        acked_total.fetch_add(1);
        --inflight;
      } else if (op == "error") {
        errors.push_back(*o);
        --inflight;
      }
    }
  }
};

class DurabilityTest : public ::testing::Test {
 protected:
  // Four publishers (two WebSocket, two raw TCP) publish to `ch` until the server
  // is killed with SIGKILL, after at least `min_acked` acks and `min_run`; then the
  // server restarts on the same data folder. The kill must find pubs in flight; on a
  // starved machine the publishers can sit with every pub answered at that instant,
  // so an attempt that found none is run again (new users, same channel and data:
  // the callers' checks cover every attempt's messages).
  static std::vector<Publisher> crash_while_publishing(ServerProcess& server, const std::string& ch,
                                                       size_t min_acked,
                                                       std::chrono::milliseconds min_run) {
    std::vector<Publisher> all;
    size_t in_flight = 0;
    for (int attempt = 0; attempt < 3 && in_flight == 0; ++attempt) {
      std::vector<Publisher> pubs(4);
      for (size_t k = 0; k < pubs.size(); ++k) {
        pubs[k].user = (k % 2 ? "tcp" : "ws") + std::to_string(k) +
                       (attempt ? "-" + std::to_string(attempt) : "");
        pubs[k].wire = k % 2 ? Wire::kTcp : Wire::kWebSocket;
      }
      std::atomic<size_t> acked_total{0};
      std::vector<std::thread> threads;
      const auto start = Clock::now();
      for (auto& p : pubs) threads.emplace_back([&] { p.run(server, ch, acked_total); });
      while ((acked_total.load() < min_acked || Clock::now() - start < min_run) &&
             Clock::now() - start < 15s) {
        std::this_thread::sleep_for(5ms);
      }
      server.kill9();
      const auto killed_after =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      for (auto& t : threads) t.join();
      server.restart();
      for (const auto& p : pubs) {
        EXPECT_TRUE(p.errors.empty()) << p.user << ": " << (p.errors.empty() ? "" : p.errors.front());
        in_flight += p.sent.size() - p.acked.size();
      }
      std::printf("attempt %d: killed after %lld ms: %zu acknowledged, %zu in flight\n", attempt,
                  static_cast<long long>(killed_after.count()), acked_total.load(), in_flight);
      EXPECT_GE(acked_total.load(), min_acked);
      for (auto& p : pubs) all.push_back(std::move(p));
    }
    EXPECT_GT(in_flight, 0u) << "no kill happened while publishing, in 3 attempts";
    return all;
  }

  // Every acknowledged message is stored with its seq, sender and body.
  static void expect_every_ack_stored(const std::vector<Publisher>& pubs,
                                      const std::vector<std::string>& history) {
    std::map<std::string, const std::string*> by_key;
    for (const auto& m : history) by_key[key_of(m)] = &m;
    size_t checked = 0, missing = 0, wrong = 0;
    std::string first_problem;
    for (const auto& p : pubs) {
      for (const auto& [id, seq] : p.acked) {
        ++checked;
        auto it = by_key.find(p.user + "/" + id);
        if (it == by_key.end()) {
          if (!missing++ && first_problem.empty()) first_problem = "lost: " + id;
          continue;
        }
        const std::string& m = *it->second;
        if (json_int(m, "seq") != seq || json_raw(m, "body") != body_of(id)) {
          if (!wrong++ && first_problem.empty()) {
            first_problem = id + " acked as seq " + std::to_string(seq) + ", stored as " + m;
          }
        }
      }
    }
    EXPECT_GT(checked, 0u);
    EXPECT_EQ(missing, 0u) << "of " << checked << " acknowledged; " << first_problem;
    EXPECT_EQ(wrong, 0u) << first_problem;
  }
};

TEST_F(DurabilityTest, Kill9KeepsEveryAcknowledgedMessageWithItsSeqAndBody) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "log:crash-acked";
  auto pubs = crash_while_publishing(server, ch, 2000, 1500ms);
  expect_every_ack_stored(pubs, http_history_all(server.http_port(), ch));
}

TEST_F(DurabilityTest, Kill9LeavesGapFreeSeqsAndNoMessageTwice) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "log:crash-gaps";
  auto pubs = crash_while_publishing(server, ch, 2000, 1500ms);
  auto history = http_history_all(server.http_port(), ch);
  EXPECT_FALSE(history.empty());
  EXPECT_EQ(gap_or_duplicate(history), "");
}

TEST_F(DurabilityTest, RetriedInFlightPubsAfterKill9AreStoredExactlyOnce) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "log:crash-retry";
  auto pubs = crash_while_publishing(server, ch, 1000, 1000ms);
  const auto before = http_history_all(server.http_port(), ch);
  ASSERT_EQ(gap_or_duplicate(before), "");
  std::map<std::string, int64_t> stored;  // from/id -> seq
  for (const auto& m : before) stored[key_of(m)] = json_int(m, "seq").value_or(0);
  const int64_t stored_max = static_cast<int64_t>(before.size());

  // As a real client would: retry every pub that got no ack, same user, same id.
  size_t fresh = 0, retried = 0;
  for (const auto& p : pubs) {
    std::vector<std::string> retry;
    for (const auto& id : p.sent) {
      if (!p.acked.contains(id)) retry.push_back(id);
    }
    auto c = Client::connect(server.port(p.wire), p.wire);
    ASSERT_EQ(op_of(c->hello(ServerProcess::token(p.user))), "welcome");
    ASSERT_EQ(op_of(c->join(ch)), "joined");
    retried += retry.size();
    for (size_t i = 0; i < retry.size(); ++i) c->send(pub_frame(ch, retry[i], body_of(retry[i]), i));
    for (size_t n = 0; n < retry.size(); ++n) {
      auto ack = c->expect("ack");
      ASSERT_FALSE(ack.empty()) << p.user << ": no ack for a retry";
      const std::string id = json_str(ack, "id").value_or("");
      const int64_t seq = json_int(ack, "seq").value_or(0);
      auto was = stored.find(p.user + "/" + id);
      if (json_bool(ack, "dup") == true) {
        ASSERT_NE(was, stored.end()) << "dup of a message that is not stored: " << ack;
        EXPECT_EQ(seq, was->second) << ack;
      } else {
        EXPECT_EQ(was, stored.end()) << "stored again under a new seq: " << ack;
        EXPECT_GT(seq, stored_max) << ack;
        ++fresh;
      }
    }
  }

  std::printf("retried %zu: %zu were stored before the kill, %zu new\n", retried, retried - fresh,
              fresh);

  // Now every id ever sent is stored exactly once, still gap-free.
  const auto after = http_history_all(server.http_port(), ch);
  EXPECT_EQ(gap_or_duplicate(after), "");
  EXPECT_EQ(after.size(), before.size() + fresh);
  size_t sent = 0;
  for (const auto& p : pubs) sent += p.sent.size();
  EXPECT_EQ(after.size(), sent);
}

TEST_F(DurabilityTest, FsyncAlwaysKeepsEveryAcknowledgedMessageThroughKill9) {
  ServerProcess server(spec("fsync = \"always\""));
  server.start();
  const std::string ch = "log:crash-fsync";
  auto pubs = crash_while_publishing(server, ch, 300, 500ms);
  auto history = http_history_all(server.http_port(), ch);
  EXPECT_EQ(gap_or_duplicate(history), "");
  expect_every_ack_stored(pubs, history);
}

TEST_F(DurabilityTest, DedupeHoldsAcrossARestart) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "chat:dedupe-restart";
  {
    auto c = Client::connect(server.http_port());
    c->hello(ServerProcess::token("alice"));
    c->join(ch);
    c->send(pub_frame(ch, "m0", R"({"n":0})", 1));
    EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
    c->send(pub_frame(ch, "m1", R"({"n":1})", 2));
    EXPECT_EQ(json_int(c->expect("ack"), "seq"), 2);
  }
  server.kill9();
  server.restart();
  auto c = Client::connect(server.http_port());
  c->hello(ServerProcess::token("alice"));
  c->join(ch);
  c->send(pub_frame(ch, "m1", R"({"n":1})", 3));
  EXPECT_EQ(c->expect("ack"), R"({"op":"ack","rid":3,"ch":")" + ch +
                                  R"(","id":"m1","seq":2,"dup":true})");
  c->send(pub_frame(ch, "m2", R"({"n":2})", 4));
  EXPECT_EQ(c->expect("ack"), R"({"op":"ack","rid":4,"ch":")" + ch +
                                  R"(","id":"m2","seq":3,"dup":false})");
  auto history = http_history_all(server.http_port(), ch);
  EXPECT_EQ(history.size(), 3u);
  EXPECT_EQ(gap_or_duplicate(history), "");
}

TEST_F(DurabilityTest, NonDurableNamespaceIsAckedAndDeliveredButForgottenOnRestart) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "world:ephemeral";  // durable = false in the default tenants
  {
    auto pub = Client::connect(server.http_port());
    auto sub = Client::connect(server.http_port());
    pub->hello(ServerProcess::token("alice"));
    sub->hello(ServerProcess::token("bob"));
    pub->join(ch);
    sub->join(ch);
    for (int i = 1; i <= 3; ++i) {
      pub->send(pub_frame(ch, "e" + std::to_string(i), std::to_string(i), i));
      EXPECT_EQ(json_int(pub->expect("ack"), "seq"), i);
    }
    for (int i = 1; i <= 3; ++i) {
      auto m = sub->expect("msg");
      EXPECT_EQ(json_int(m, "seq"), i) << m;
      EXPECT_EQ(json_raw(m, "body"), std::to_string(i));
    }
    EXPECT_EQ(http_history_all(server.http_port(), ch).size(), 3u);
  }
  server.terminate();
  ASSERT_EQ(server.wait_exit(10s), 0);
  server.restart();
  auto pub = Client::connect(server.http_port());
  pub->hello(ServerProcess::token("alice"));
  auto joined = pub->join(ch);
  EXPECT_EQ(json_int(joined, "seq"), 0) << joined;
  EXPECT_TRUE(http_history_all(server.http_port(), ch).empty());
  pub->send(pub_frame(ch, "e1", "1", 1));  // a new message, not a duplicate
  EXPECT_EQ(pub->expect("ack"), R"({"op":"ack","rid":1,"ch":")" + ch +
                                    R"(","id":"e1","seq":1,"dup":false})");
}

}  // namespace
}  // namespace parley::testing
