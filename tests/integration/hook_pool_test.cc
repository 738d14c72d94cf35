// How a hook's connections degrade under a slow or failing app server
// (docs/operations.md "Hooks under load"), over real sockets: the real server
// asks a Node app server (tests/integration/hook_pool_app.mjs, Node's own http
// module, kept-alive) that answers late, never, or drops every connection, and
// counts the connections it accepts and which one carried each request.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "support/app_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

const fs::path kApp = fs::path(PARLEY_SOURCE_DIR) / "tests" / "integration" / "hook_pool_app.mjs";

// The Node app server: its three ports, started once for the suite.
struct NodeApp {
  int app = 0, drop = 0, stats = 0;
  pid_t pid = -1;
  std::string log;

  bool start(const std::string& dir) {
    app = pick_free_port(20000, 32000);
    drop = pick_free_port(20000, 32000);
    stats = pick_free_port(20000, 32000);
    if (!app || !drop || !stats || app == drop || drop == stats || app == stats) return false;
    log = dir + "/app.log";
    pid = spawn_child({"node", kApp.string(), std::to_string(app), std::to_string(drop), std::to_string(stats)},
                      SpawnOptions{log});
    return pid > 0 && wait_child_ready(pid, 10000, 20, [this] {
             return read_file(log).find("ready") != std::string::npos;
           });
  }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    wait_child_exit(pid, std::chrono::seconds(5));
    pid = -1;
  }
  int64_t count(const char* key) const {
    return json_int(http_request(uint16_t(stats), "GET", "/stats").body, key).value_or(-1);
  }
  // The requests it got, by pub id: {conn, at, answered_at, closed_at} (-1: none).
  struct Seen {
    int64_t conn = -1, at = -1, answered_at = -1, closed_at = -1;
  };
  std::map<std::string, Seen> requests() const {
    std::map<std::string, Seen> out;
    for (const auto& item : json_array_items(http_request(uint16_t(stats), "GET", "/requests").body)) {
      out[json_str(item, "id").value_or("")] =
          Seen{json_int(item, "conn").value_or(-1), json_int(item, "at").value_or(-1),
               json_int(item, "answered_at").value_or(-1), json_int(item, "closed_at").value_or(-1)};
    }
    return out;
  }
};

ServerSpec pool_spec(const NodeApp& app) {
  const std::string at = "http://127.0.0.1:" + std::to_string(app.app) + "/hook";
  const std::string drop = "http://127.0.0.1:" + std::to_string(app.drop) + "/hook";
  const std::string dead = "http://127.0.0.1:" + std::to_string(dead_port()) + "/hook";
  std::string t = std::string("[tenants.demo]\nsecret = \"") + kDemoSecret + "\"\napi_key = \"" + kDemoApiKey +
                  "\"\npublish_per_conn_sec = 0\npublish_per_sec = 0\n";
  auto ns = [&t](const std::string& name, const std::string& url, const std::string& lines) {
    t += "\n[tenants.demo.namespaces." + name + "]\nhook_pub = \"" + url + "\"\n" + lines;
  };
  // One slot and no queue: a late exchange visibly holds the hook's only slot.
  ns("lateclosed", at, "hook_pub_timeout_ms = 150\nhook_pub_max_inflight = 1\nhook_pub_queue = 0\n");
  ns("lateopen", at,
     "hook_pub_timeout_ms = 150\nhook_pub_fail = \"open\"\nhook_pub_max_inflight = 1\nhook_pub_queue = 0\n");
  // 100 ms: the late answer's grace is its minimum, 1 s.
  ns("hang", at, "hook_pub_timeout_ms = 100\nhook_pub_max_inflight = 1\n");
  ns("narrowq", at, "hook_pub_timeout_ms = 5000\nhook_pub_max_inflight = 2\nhook_pub_queue = 2\n");
  ns("deepq", at, "hook_pub_timeout_ms = 5000\nhook_pub_max_inflight = 2\nhook_pub_queue = 24\n");
  ns("burst", at, "hook_pub_timeout_ms = 5000\n");
  ns("dropped", drop, "hook_pub_fail = \"open\"\n");
  ns("dead", dead, "hook_pub_fail = \"open\"\n");
  // One loop: a hook's per-loop bounds are the whole server's.
  return spec_with_tenants(t, "threads = 1\n");
}

class HookConnections : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = make_temp_dir("parley-hookpool-");
    app_ = new NodeApp;
    if (!app_->start(dir_)) return;
    server_ = new ServerProcess(pool_spec(*app_));
    server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (app_) app_->stop();
    delete app_;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "the Node app server did not start: " << read_file(app_->log);
  }
  std::unique_ptr<Client> user(const std::string& name) { return connect_as(server_->http_port(), name); }
  static int64_t metric(const std::string& family, const std::string& ns) {
    return metric_value(server_->http_port(), family + "{hook=\"demo/" + ns + "/pub\"}");
  }
  static bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s) {
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return pred();
  }
  static std::string dir_;
  static NodeApp* app_;
  static ServerProcess* server_;
};
std::string HookConnections::dir_;
NodeApp* HookConnections::app_ = nullptr;
ServerProcess* HookConnections::server_ = nullptr;

// Sends a pub and returns its reply (ack or error) and how long it took.
std::pair<std::string, int64_t> timed_pub(Client& c, const std::string& ch, const std::string& id,
                                          const std::string& body) {
  const auto t0 = Clock::now();
  c.send(pub_frame(ch, id, body, 7));
  const std::string reply = ack_or_error(c, 10s);
  return {reply, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()};
}

TEST_F(HookConnections, ALateAnswerIsDroppedAndItsConnectionCarriesTheNextCall) {
  auto a = user("u1");
  auto b = user("u2");
  a->join("lateclosed:x");
  b->join("lateclosed:x");
  const int64_t accepted = app_->count("connections");
  const int64_t closed = app_->count("closed");
  auto [reply, ms] = timed_pub(*a, "lateclosed:x", "slow1", R"({"delay":700})");
  EXPECT_EQ(json_str(reply, "code"), "unavailable") << reply;
  EXPECT_LT(ms, 600);  // the deadline is 150 ms, the answer comes at 700
  // The slow request still holds the hook's one slot on its connection.
  auto [held, held_ms] = timed_pub(*b, "lateclosed:x", "held1", "{}");
  EXPECT_EQ(json_str(held, "code"), "backpressure") << held;
  ASSERT_TRUE(wait_until([] { return metric("parley_hook_late_answers_total", "lateclosed") == 1; }))
      << "late answers " << metric("parley_hook_late_answers_total", "lateclosed");
  auto [ok, ok_ms] = timed_pub(*a, "lateclosed:x", "fast1", "{}");
  EXPECT_EQ(op_of(ok), "ack") << ok;
  EXPECT_EQ(json_int(ok, "seq"), 1);  // the refused pub took no seq, its late allow changed nothing
  const auto seen = app_->requests();
  ASSERT_TRUE(seen.count("slow1") && seen.count("fast1"));
  EXPECT_GE(seen.at("slow1").answered_at, 0);
  EXPECT_EQ(seen.at("fast1").conn, seen.at("slow1").conn);  // the same kept-alive connection
  EXPECT_FALSE(seen.count("held1"));                         // refused before any request
  EXPECT_EQ(app_->count("connections") - accepted, 1);
  EXPECT_EQ(app_->count("closed") - closed, 0);
  EXPECT_EQ(metric("parley_hook_late_closed_total", "lateclosed"), 0);
  EXPECT_EQ(metric("parley_hook_connections", "lateclosed"), 1);
  EXPECT_EQ(http_history_all(server_->http_port(), "lateclosed:x").size(), 1u);
}

TEST_F(HookConnections, ALateDenyOfAHookThatFailedOpenChangesNothing) {
  auto a = user("u1");
  a->join("lateopen:x");
  auto [reply, ms] = timed_pub(*a, "lateopen:x", "slow2", R"({"delay":500,"verdict":"deny"})");
  EXPECT_EQ(op_of(reply), "ack") << reply;
  EXPECT_EQ(json_int(reply, "seq"), 1);
  EXPECT_LT(ms, 450);
  ASSERT_TRUE(wait_until([] { return metric("parley_hook_late_answers_total", "lateopen") == 1; }));
  auto [next, next_ms] = timed_pub(*a, "lateopen:x", "fast2", "{}");
  EXPECT_EQ(json_int(next, "seq"), 2) << next;
  const auto hist = http_history_all(server_->http_port(), "lateopen:x");
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(json_str(hist[0], "id"), "slow2");
  const auto seen = app_->requests();
  EXPECT_EQ(seen.at("fast2").conn, seen.at("slow2").conn);
}

TEST_F(HookConnections, AnAnswerThatNeverComesClosesItsConnectionAfterTheGrace) {
  auto a = user("u1");
  a->join("hang:x");
  const int64_t accepted = app_->count("connections");
  auto [reply, ms] = timed_pub(*a, "hang:x", "lost1", R"({"delay":60000})");
  EXPECT_EQ(json_str(reply, "code"), "unavailable") << reply;
  EXPECT_LT(ms, 600);
  ASSERT_TRUE(wait_until([] { return metric("parley_hook_late_closed_total", "hang") == 1; }));
  const auto lost = app_->requests().at("lost1");
  ASSERT_GE(lost.closed_at, 0) << "the app server did not see its connection close";
  // Deadline 100 ms + grace 1 s from the ask; the request arrived just after it.
  EXPECT_GE(lost.closed_at - lost.at, 1000);
  EXPECT_LT(lost.closed_at - lost.at, 4000);
  EXPECT_EQ(metric("parley_hook_late_answers_total", "hang"), 0);
  // The next call gets a new connection and its answer.
  auto [ok, ok_ms] = timed_pub(*a, "hang:x", "after1", "{}");
  EXPECT_EQ(op_of(ok), "ack") << ok;
  EXPECT_NE(app_->requests().at("after1").conn, lost.conn);
  EXPECT_EQ(app_->count("connections") - accepted, 2);
}

// Floods a hook whose app server takes 200 ms with `n` pubs at once (one per
// connection: a connection's frames wait behind its own hook), after one pub
// that teaches the pool how long an exchange takes. The retry_ms of each
// backpressure refusal, and the number of pubs acked.
std::pair<std::vector<int64_t>, int> flood(uint16_t port, const std::string& ns, int n) {
  const std::string ch = ns + ":x";
  auto first = connect_as(port, "warm");
  first->join(ch);
  first->send(pub_frame(ch, ns + "-warm", R"({"delay":200})", 1));
  EXPECT_EQ(op_of(ack_or_error(*first, 10s)), "ack");
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < n; ++i) {
    clients.push_back(connect_as(port, "f" + std::to_string(i)));
    clients.back()->join(ch);
  }
  for (int i = 0; i < n; ++i) clients[i]->send(pub_frame(ch, ns + std::to_string(i), R"({"delay":200})", 2));
  std::vector<int64_t> retries;
  int acked = 0;
  for (auto& c : clients) {
    const std::string r = ack_or_error(*c, 10s);
    if (op_of(r) == "ack") ++acked;
    if (json_str(r, "code") == "backpressure") retries.push_back(json_int(r, "retry_ms").value_or(-1));
  }
  std::sort(retries.begin(), retries.end());
  return {retries, acked};
}

TEST_F(HookConnections, ABackpressureRetryGrowsWithTheQueueAhead) {
  const int64_t accepted = app_->count("connections");
  // 2 in flight + 2 waiting of 200 ms each ahead: ~400 ms; 2 + 24: ~2.6 s.
  auto [narrow, narrow_acked] = flood(server_->http_port(), "narrowq", 12);
  auto [deep, deep_acked] = flood(server_->http_port(), "deepq", 40);
  ASSERT_FALSE(narrow.empty());
  ASSERT_FALSE(deep.empty());
  EXPECT_EQ(narrow_acked + int(narrow.size()), 12);
  EXPECT_EQ(deep_acked + int(deep.size()), 40);
  EXPECT_GE(narrow_acked, 4);
  EXPECT_GE(deep_acked, 26);
  for (auto r : narrow) EXPECT_TRUE(r >= 100 && r <= 5000) << r;
  for (auto r : deep) EXPECT_TRUE(r >= 100 && r <= 5000) << r;
  const int64_t narrow_median = narrow[narrow.size() / 2], deep_median = deep[deep.size() / 2];
  EXPECT_GE(deep_median, 2 * narrow_median) << "narrow " << narrow_median << " deep " << deep_median;
  EXPECT_GE(deep.front(), 1000);
  // The floods never needed more connections than slots.
  EXPECT_LE(app_->count("connections") - accepted, 4);
}

TEST_F(HookConnections, NewConnectionsAreOpenedAtABoundedRate) {
  // 40 pubs at once on a hook with 64 slots, each answered in 400 ms: 40
  // connections are wanted at once; 16 open at once, then 32 a second.
  const std::string ch = "burst:x";
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 40; ++i) {
    clients.push_back(user("b" + std::to_string(i)));
    clients.back()->join(ch);
  }
  for (int i = 0; i < 40; ++i) clients[i]->send(pub_frame(ch, "burst" + std::to_string(i), R"({"delay":400})", 3));
  for (auto& c : clients) EXPECT_EQ(op_of(ack_or_error(*c, 10s)), "ack");
  // When each connection carried its first request, by the app server's clock.
  std::map<int64_t, int64_t> first_use;
  for (const auto& [id, r] : app_->requests()) {
    if (id.rfind("burst", 0) != 0) continue;
    auto [it, fresh] = first_use.emplace(r.conn, r.at);
    if (!fresh) it->second = std::min(it->second, r.at);
  }
  ASSERT_FALSE(first_use.empty());
  int64_t t0 = INT64_MAX;
  for (const auto& [conn, at] : first_use) t0 = std::min(t0, at);
  int early = 0;
  for (const auto& [conn, at] : first_use) early += at - t0 <= 100;
  // The burst, 32/s x 0.1 s, and 2 for the clocks' rounding; unbounded, all 40
  // came within a few ms.
  EXPECT_LE(early, 16 + 4 + 2) << "connections in the first 100 ms";
  EXPECT_LE(int(first_use.size()), 40);
  EXPECT_GE(metric("parley_hook_connects_throttled_total", "burst"), 1);
  EXPECT_EQ(metric("parley_hook_connects_total", "burst"), int64_t(first_use.size()));
}

// Sequential pubs for `secs` on a hook that fails open: their count (each acked).
int pubs_for(Client& c, const std::string& ch, std::chrono::milliseconds span) {
  const auto end = Clock::now() + span;
  int n = 0;
  while (Clock::now() < end) {
    c.send(pub_frame(ch, "p" + std::to_string(n), "{}", 4));
    const std::string r = ack_or_error(c, 5s);
    EXPECT_EQ(op_of(r), "ack") << r;
    if (op_of(r) != "ack") break;
    ++n;
  }
  return n;
}

TEST_F(HookConnections, AnAppServerThatDropsEveryConnectionGetsFewConnects) {
  auto a = user("u1");
  a->join("dropped:x");
  const int64_t drops = app_->count("drops");
  const int pubs = pubs_for(*a, "dropped:x", 2000ms);
  const int64_t connects = app_->count("drops") - drops;
  // 50, 100, 200, 400, 800, 1000 ms pauses: ~6 in 2 s, where each pub used to open one.
  EXPECT_GE(pubs, 50);
  EXPECT_GE(connects, 2);  // it keeps trying
  EXPECT_LE(connects, 12) << pubs << " pubs";
  EXPECT_EQ(metric("parley_hook_connects_total", "dropped"), connects);
  EXPECT_GE(metric("parley_hook_connects_throttled_total", "dropped"), pubs - connects);
  EXPECT_EQ(metric("parley_hook_failed_open_total", "dropped"), pubs);
}

TEST_F(HookConnections, AnAppServerThatIsDownGetsFewConnects) {
  auto a = user("u1");
  a->join("dead:x");
  const int pubs = pubs_for(*a, "dead:x", 2000ms);
  const int64_t connects = metric("parley_hook_connects_total", "dead");
  EXPECT_GE(pubs, 50);
  EXPECT_GE(connects, 2);
  EXPECT_LE(connects, 12) << pubs << " pubs";
  EXPECT_EQ(metric("parley_hook_connections", "dead"), 0);
}

}  // namespace
}  // namespace parley::testing
