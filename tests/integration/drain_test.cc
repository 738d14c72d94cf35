// Draining on SIGTERM (PROTOCOL.md "Server frames": `bye` with code `draining` and
// `reconnect_ms`): every connected client gets the bye as its last frame and is
// closed, the process exits 0 within seconds, nothing acknowledged is lost, and
// no new connection is admitted while the server drains.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kTenantExtra =
    "publish_per_sec = 0\npublish_per_conn_sec = 0\n"
    "\n[tenants.demo.namespaces.log]\nhistory = 1000000\n";
constexpr size_t kWindow = 32;  // pubs in flight per publisher

ServerSpec spec() { return spec_with_tenants(default_tenants_toml(kTenantExtra)); }

std::string body_of(const std::string& id) { return R"({"id":")" + id + R"("})"; }

// What a client saw of the drain: the bye, anything after it, how it closed.
struct Ending {
  std::string bye;
  std::vector<std::string> after_bye;
  std::optional<int> close_code;  // WebSocket close code; 0 for TCP
};

// Reads until the connection closes (bounded), keeping the bye (unless already
// read, then given) and what follows it.
Ending read_to_the_end(Client& c, std::string bye = "", std::chrono::milliseconds timeout = 10s) {
  Ending e;
  e.bye = std::move(bye);
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto o = c.next(500ms);
    if (!o) {
      if (c.closed()) break;
      continue;
    }
    if (!e.bye.empty()) e.after_bye.push_back(*o);
    else if (op_of(*o) == "bye") e.bye = *o;
  }
  e.close_code = c.wait_closed(0ms);
  return e;
}

void expect_bye_then_close(const Ending& e, Wire wire, const std::string& who) {
  EXPECT_EQ(op_of(e.bye), "bye") << who << " got no bye";
  EXPECT_EQ(json_str(e.bye, "code"), "draining") << who << ": " << e.bye;
  EXPECT_GT(json_int(e.bye, "reconnect_ms").value_or(0), 0) << who << ": " << e.bye;
  EXPECT_TRUE(e.after_bye.empty()) << who << " got after the bye: " << e.after_bye.front();
  ASSERT_TRUE(e.close_code.has_value()) << who << " was not closed";
  // RFC 6455 7.4.1: 1001, the server is going away.
  if (wire == Wire::kWebSocket) {
    EXPECT_EQ(*e.close_code, 1001) << who;
  }
}

// A client publishing with kWindow pubs in flight from its own thread until the
// server drains it (an `unavailable` error or the bye stops it, as it would a
// real client); records acks and how the connection ended.
struct Publisher {
  std::string user;
  Wire wire = Wire::kWebSocket;
  std::vector<std::string> sent;
  std::map<std::string, int64_t> acked;  // id -> seq
  std::vector<std::string> errors;       // other than `unavailable`
  Ending ending;

  void run(const ServerProcess& server, const std::string& ch, std::atomic<size_t>& acked_total) {
    auto c = Client::connect(server.port(wire), wire);
    if (op_of(c->hello(ServerProcess::token(user))) != "welcome" || op_of(c->join(ch)) != "joined") {
      errors.push_back("could not join");
      return;
    }
    size_t inflight = 0;
    bool stop = false;
    const auto deadline = Clock::now() + 30s;
    while (Clock::now() < deadline) {
      while (!stop && inflight < kWindow) {
        sent.push_back(user + "-" + std::to_string(sent.size()));
        c->send(pub_frame(ch, sent.back(), body_of(sent.back()), sent.size() - 1));
        ++inflight;
      }
      auto o = c->next(1s);
      if (!o) {
        if (c->closed()) break;
        continue;
      }
      const std::string op = op_of(*o);
      if (op == "ack") {
        acked[json_str(*o, "id").value_or("")] = json_int(*o, "seq").value_or(0);
        acked_total.fetch_add(1);
        --inflight;
      } else if (op == "error") {
        if (json_str(*o, "code") != "unavailable") errors.push_back(*o);
        stop = true;
        --inflight;
      } else if (op == "bye") {
        ending = read_to_the_end(*c, *o);
        return;
      }
    }
    ending.close_code = c->wait_closed(0ms);
  }
};

class DrainTest : public ::testing::Test {
 protected:
  static std::unique_ptr<Client> member(const ServerProcess& server, const std::string& user,
                                        const std::string& ch, Wire wire) {
    auto c = connect_as(server.port(wire), user, "demo", wire);
    EXPECT_EQ(op_of(c->join(ch)), "joined");
    return c;
  }

  // Starts two publishers (WebSocket and TCP) on `ch` and returns once they have
  // `min_acked` acks between them.
  static void start_publishing(const ServerProcess& server, const std::string& ch,
                               std::vector<Publisher>& pubs, std::vector<std::thread>& threads,
                               std::atomic<size_t>& acked_total, size_t min_acked) {
    pubs.resize(2);
    pubs[0].user = "wspub";
    pubs[1].user = "tcppub";
    pubs[1].wire = Wire::kTcp;
    for (auto& p : pubs) threads.emplace_back([&] { p.run(server, ch, acked_total); });
    const auto deadline = Clock::now() + 10s;
    while (acked_total.load() < min_acked && Clock::now() < deadline) std::this_thread::sleep_for(2ms);
    EXPECT_GE(acked_total.load(), min_acked);
  }

  // True when a new connection over `wire` gets a welcome.
  static bool admits_a_new_session(const ServerProcess& server, Wire wire) {
    try {
      auto c = Client::connect(server.port(wire), wire);
      return op_of(c->hello(ServerProcess::token("late"))) == "welcome";
    } catch (const std::exception&) {
      return false;  // refused at connect or at the upgrade
    }
  }
};

TEST_F(DrainTest, SigtermSendsByeDrainingToEveryClientThenClosesIt) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "chat:drain";
  std::vector<std::pair<std::unique_ptr<Client>, Wire>> idle;
  for (int i = 0; i < 4; ++i) {
    const Wire w = i % 2 ? Wire::kTcp : Wire::kWebSocket;
    idle.emplace_back(member(server, "idle" + std::to_string(i), ch, w), w);
  }
  std::vector<Publisher> pubs;
  std::vector<std::thread> threads;
  std::atomic<size_t> acked{0};
  start_publishing(server, ch, pubs, threads, acked, 200);

  server.terminate();
  for (size_t i = 0; i < idle.size(); ++i) {
    expect_bye_then_close(read_to_the_end(*idle[i].first), idle[i].second, "idle" + std::to_string(i));
  }
  for (auto& t : threads) t.join();
  for (const auto& p : pubs) {
    EXPECT_TRUE(p.errors.empty()) << p.user << ": " << (p.errors.empty() ? "" : p.errors.front());
    expect_bye_then_close(p.ending, p.wire, p.user);
  }
}

TEST_F(DrainTest, ServerExitsZeroWithinSecondsOfSigterm) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "chat:drain-exit";
  auto a = member(server, "a", ch, Wire::kWebSocket);
  auto b = member(server, "b", ch, Wire::kTcp);
  std::vector<Publisher> pubs;
  std::vector<std::thread> threads;
  std::atomic<size_t> acked{0};
  start_publishing(server, ch, pubs, threads, acked, 200);

  const auto sent_at = Clock::now();
  server.terminate();
  // As real clients do, a and b hang up once the server has closed them.
  read_to_the_end(*a);
  read_to_the_end(*b);
  a.reset();
  b.reset();
  EXPECT_EQ(server.wait_exit(5s), 0) << server.log();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent_at);
  EXPECT_LT(took.count(), 5000);
  for (auto& t : threads) t.join();
}

TEST_F(DrainTest, EveryMessageAckedBeforeTheDrainIsInHistoryAfterRestart) {
  ServerProcess server(spec());
  server.start();
  const std::string ch = "log:drain-acked";
  std::vector<Publisher> pubs;
  std::vector<std::thread> threads;
  std::atomic<size_t> acked{0};
  start_publishing(server, ch, pubs, threads, acked, 1000);

  server.terminate();
  for (auto& t : threads) t.join();
  ASSERT_EQ(server.wait_exit(10s), 0) << server.log();
  server.restart();

  const auto history = http_history_all(server.http_port(), ch);
  std::map<std::string, std::string> by_key;  // from/id -> msg
  for (size_t i = 0; i < history.size(); ++i) {
    ASSERT_EQ(json_int(history[i], "seq"), static_cast<int64_t>(i + 1)) << history[i];
    const std::string key = json_str(history[i], "from").value_or("") + "/" +
                            json_str(history[i], "id").value_or("");
    ASSERT_TRUE(by_key.emplace(key, history[i]).second) << "stored twice: " << history[i];
  }
  size_t checked = 0;
  for (const auto& p : pubs) {
    for (const auto& [id, seq] : p.acked) {
      auto it = by_key.find(p.user + "/" + id);
      ASSERT_NE(it, by_key.end()) << "acknowledged as seq " << seq << " but lost: " << id;
      EXPECT_EQ(json_int(it->second, "seq"), seq) << it->second;
      EXPECT_EQ(json_raw(it->second, "body"), body_of(id));
      ++checked;
    }
  }
  EXPECT_GE(checked, 1000u);
}

TEST_F(DrainTest, NewConnectionsAreRefusedWhileDraining) {
  ServerProcess server(spec());
  server.start();
  // A peer that never answers the closing handshake keeps the drain going.
  auto stalled = RawWs::open(server.http_port());
  auto watcher = member(server, "watcher", "chat:drain-refuse", Wire::kWebSocket);
  ASSERT_TRUE(admits_a_new_session(server, Wire::kWebSocket));

  server.terminate();
  expect_bye_then_close(read_to_the_end(*watcher), Wire::kWebSocket, "watcher");
  EXPECT_FALSE(admits_a_new_session(server, Wire::kWebSocket));
  EXPECT_FALSE(admits_a_new_session(server, Wire::kTcp));
  EXPECT_EQ(server.wait_exit(1ms), -1) << "the server had already exited: not during the drain";
  EXPECT_EQ(server.wait_exit(10s), 0) << server.log();
}

}  // namespace
}  // namespace parley::testing
