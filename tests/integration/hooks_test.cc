// Synchronous hooks (PROTOCOL.md "Hooks") over real sockets: the real server
// asks an app server written in the test (support/app_server.h), which allows,
// denies, rewrites, stalls or is not there at all.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>

#include "support/app_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The app server's rules, by the path each hook posts to and what it asks.
AppAnswer decide(const AppRequest& r) {
  AppAnswer a;
  a.body = R"({"allow":true})";
  if (r.target == "/connect") {
    if (has(r.body, R"("user":"banned")")) a.body = R"({"allow":false,"code":"forbidden","msg":"banned from this game"})";
  } else if (r.target == "/gate") {
    if (has(r.body, R"("ch":"gate:closed")")) {
      a.body = R"({"allow":false,"code":"forbidden","msg":"not in this match"})";
    } else if (has(r.body, "\"bad\"")) {
      a.body = R"({"allow":false,"code":"bad_request","msg":"no swearing"})";
    } else if (has(r.body, "\"darn\"")) {
      a.body = R"({"allow":true,"body":{"t":"****","filtered":true}})";
    } else if (has(r.body, "\"garbage\"")) {
      a.body = R"({"allow":"maybe"})";
    }
  } else if (r.target == "/slow") {
    if (r.body.find(R"("hook":"pub")") != std::string::npos) a.delay_ms = 1000;
  } else if (r.target == "/narrow") {
    a.delay_ms = 600;
  }
  return a;
}

ServerSpec hooks_spec(const AppServer& app, const std::string& unix_app) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(dead_port()) + "/hook";
  std::string t = std::string("[tenants.demo]\nsecret = \"") + kDemoSecret + "\"\napi_key = \"" +
                  kDemoApiKey + "\"\npublish_per_conn_sec = 0\npublish_per_sec = 0\n" +
                  "hook_connect = \"" + app.url("/connect") + "\"\n";
  auto ns = [&t](const std::string& name, const std::string& lines) {
    t += "\n[tenants.demo.namespaces." + name + "]\n" + lines;
  };
  ns("gate", "hook_join = \"" + app.url("/gate") + "\"\nhook_pub = \"" + app.url("/gate") + "\"\n");
  ns("slowopen", "hook_pub = \"" + app.url("/slow") + "\"\nhook_pub_timeout_ms = 150\nhook_pub_fail = \"open\"\n");
  ns("slowclosed", "hook_pub = \"" + app.url("/slow") + "\"\nhook_pub_timeout_ms = 150\n");
  ns("downopen", "hook_pub = \"" + dead + "\"\nhook_pub_fail = \"open\"\nhook_join = \"" + dead +
                     "\"\nhook_join_fail = \"open\"\n");
  ns("downclosed", "hook_pub = \"" + dead + "\"\nhook_join = \"" + dead + "\"\nhook_join_fail = \"open\"\n");
  ns("local", "hook_pub = \"unix:" + unix_app + "\"\n");
  ns("narrow", "hook_pub = \"" + app.url("/narrow") +
                   "\"\nhook_pub_max_inflight = 1\nhook_pub_queue = 0\nhook_pub_timeout_ms = 5000\n");
  // One loop: the per-loop in-flight bound of `narrow` is the whole server's.
  return spec_with_tenants(t, "threads = 1\n");
}

class Hooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    app_ = new AppServer([](size_t, const AppRequest& r) { return decide(r); });
    unix_path_ = "/tmp/parley-hooks-" + std::to_string(::getpid()) + ".sock";
    // The Unix socket's app server rewrites every pub.
    unix_app_ = new AppServer(
        [](size_t, const AppRequest&) { return AppAnswer{200, 0, false, R"({"allow":true,"body":"via unix"})"}; },
        unix_path_);
    server_ = new ServerProcess(hooks_spec(*app_, unix_path_));
    server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete unix_app_;
    delete app_;
  }
  std::unique_ptr<Client> user(const std::string& name) {
    return connect_as(server_->http_port(), name);
  }
  static int64_t metric(const std::string& family, const std::string& hook) {
    return metric_value(server_->http_port(), family + "{hook=\"" + hook + "\"}");
  }
  static AppServer* app_;
  static AppServer* unix_app_;
  static std::string unix_path_;
  static ServerProcess* server_;
};
AppServer* Hooks::app_ = nullptr;
AppServer* Hooks::unix_app_ = nullptr;
std::string Hooks::unix_path_;
ServerProcess* Hooks::server_ = nullptr;

TEST_F(Hooks, TheHookRequestCarriesTenantChannelUserConnectionAndBody) {
  auto a = user("u1");
  a->join("gate:req");
  a->send(pub_frame("gate:req", "r1", R"({"t":"hello"})", 2));
  ASSERT_EQ(op_of(a->expect("ack")), "ack");
  bool seen = false;
  for (const auto& r : app_->requests()) {
    if (r.target != "/gate" || !has(r.body, R"("id":"r1")")) continue;
    seen = true;
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.headers.at("authorization"), std::string("Bearer ") + kDemoApiKey);
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    EXPECT_TRUE(has(r.body, R"({"hook":"pub","tenant":"demo","ns":"gate","ch":"gate:req","user":"u1","conn":")"))
        << r.body;
    EXPECT_TRUE(has(r.body, R"("body":{"t":"hello"}})")) << r.body;
  }
  EXPECT_TRUE(seen);
}

TEST_F(Hooks, ADeniedJoinGetsTheAppsCodeAndMessage) {
  auto a = user("u1");
  a->send(join_frame("gate:closed", std::nullopt, 3));
  const std::string e = a->expect("error");
  EXPECT_EQ(json_str(e, "code"), "forbidden") << e;
  EXPECT_EQ(json_str(e, "msg"), "not in this match");
  EXPECT_EQ(json_int(e, "rid"), 3);
  // Not a member: a pub there is forbidden by the server's own rule.
  a->send(pub_frame("gate:closed", "x", "1", 4));
  EXPECT_EQ(json_str(a->expect("error"), "msg"), "join the channel first");
  EXPECT_GE(metric("parley_hook_denied_total", "demo/gate/join"), 1);
}

TEST_F(Hooks, ADeniedPubTakesNoSeqAndIsNeverDelivered) {
  auto a = user("u1");
  auto b = user("u2");
  a->join("gate:deny");
  b->join("gate:deny");
  a->send(pub_frame("gate:deny", "m1", R"({"t":"ok"})", 1));
  EXPECT_EQ(json_int(a->expect("ack"), "seq"), 1);
  a->send(pub_frame("gate:deny", "m2", R"({"t":"bad"})", 2));
  const std::string e = a->expect("error");
  EXPECT_EQ(json_str(e, "code"), "bad_request") << e;
  EXPECT_EQ(json_str(e, "msg"), "no swearing");
  EXPECT_EQ(json_int(e, "rid"), 2);
  a->send(pub_frame("gate:deny", "m3", R"({"t":"fine"})", 3));
  EXPECT_EQ(json_int(a->expect("ack"), "seq"), 2);  // the denied pub left no gap
  until_msg(*b, "m1");
  const auto between = until_msg(*b, "m3");
  for (const auto& f : between) EXPECT_FALSE(has(f, "\"m2\"")) << f;
  std::vector<int64_t> stored;
  for (const auto& m : http_history_all(server_->http_port(), "gate:deny")) {
    stored.push_back(json_int(m, "seq").value_or(0));
    EXPECT_FALSE(has(m, "\"bad\"")) << m;
  }
  EXPECT_EQ(stored, seq_range(1, 2));
}

TEST_F(Hooks, AModifiedPubIsStoredAndDeliveredAsModified) {
  auto a = user("u1");
  auto b = user("u2");
  a->join("gate:mod");
  b->join("gate:mod");
  a->send(pub_frame("gate:mod", "m1", R"({"t":"darn"})", 1));
  EXPECT_EQ(json_int(a->expect("ack"), "seq"), 1);
  b->send(R"({"op":"ping","rid":9})");
  std::optional<std::string> msg;
  for (int i = 0; i < 10 && !msg; ++i) {
    auto f = b->next();
    if (f && op_of(*f) == "msg") msg = f;
  }
  ASSERT_TRUE(msg);
  EXPECT_EQ(json_raw(*msg, "body"), R"({"t":"****","filtered":true})");
  const auto hist = http_history_all(server_->http_port(), "gate:mod");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(json_raw(hist[0], "body"), R"({"t":"****","filtered":true})");
  EXPECT_GE(metric("parley_hook_modified_total", "demo/gate/pub"), 1);
}

TEST_F(Hooks, AHookMayBeAskedOverAUnixSocket) {
  auto a = user("u1");
  a->join("local:x");
  a->send(pub_frame("local:x", "u1", R"({"t":"hi"})", 1));
  EXPECT_EQ(json_int(a->expect("ack"), "seq"), 1);
  const auto hist = http_history_all(server_->http_port(), "local:x");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(json_raw(hist[0], "body"), R"("via unix")");
  ASSERT_EQ(unix_app_->requests().size(), 1u);
  EXPECT_EQ(unix_app_->requests()[0].target, "/");
}

TEST_F(Hooks, ABadAnswerFailsClosedAsUnavailable) {
  auto a = user("u1");
  a->join("gate:garbage");
  a->send(pub_frame("gate:garbage", "g1", R"({"t":"garbage"})", 1));
  const std::string e = a->expect("error");
  EXPECT_EQ(json_str(e, "code"), "unavailable") << e;
  EXPECT_GE(metric("parley_hook_failures_total", "demo/gate/pub"), 1);
}

// Sends a pub and returns the reply (ack or error) and how long it took.
std::pair<std::string, int64_t> timed_pub(Client& c, const std::string& ch, const std::string& id) {
  const auto t0 = Clock::now();
  c.send(pub_frame(ch, id, R"({"t":"x"})", 7));
  std::string reply;
  for (int i = 0; i < 20 && reply.empty(); ++i) {
    auto f = c.next(3s);
    if (!f) break;
    if (op_of(*f) == "ack" || op_of(*f) == "error") reply = *f;
  }
  return {reply, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()};
}

TEST_F(Hooks, ATimedOutHookFailsOpenWithinItsDeadline) {
  auto a = user("u1");
  a->join("slowopen:x");
  auto [reply, ms] = timed_pub(*a, "slowopen:x", "s1");
  EXPECT_EQ(op_of(reply), "ack") << reply;
  EXPECT_EQ(json_int(reply, "seq"), 1);
  EXPECT_LT(ms, 800);  // the app server answers after 1000 ms
  EXPECT_EQ(http_history_all(server_->http_port(), "slowopen:x").size(), 1u);
  EXPECT_GE(metric("parley_hook_timeouts_total", "demo/slowopen/pub"), 1);
  EXPECT_GE(metric("parley_hook_failed_open_total", "demo/slowopen/pub"), 1);
}

TEST_F(Hooks, ATimedOutHookFailsClosedWithinItsDeadlineAndTheClientGoesOn) {
  auto a = user("u1");
  a->join("slowclosed:x");
  auto [reply, ms] = timed_pub(*a, "slowclosed:x", "s1");
  EXPECT_EQ(json_str(reply, "code"), "unavailable") << reply;
  EXPECT_GT(json_int(reply, "retry_ms").value_or(0), 0);
  EXPECT_LT(ms, 800);
  EXPECT_TRUE(http_history_all(server_->http_port(), "slowclosed:x").empty());
  // Not stuck: the next frames are answered.
  a->send(R"({"op":"ping","rid":5})");
  EXPECT_EQ(op_of(a->expect("pong")), "pong");
  EXPECT_GE(metric("parley_hook_timeouts_total", "demo/slowclosed/pub"), 1);
}

TEST_F(Hooks, AnAppServerThatIsDownFailsOpenOrClosedAsConfigured) {
  auto a = user("u1");
  a->join("downopen:x");  // the join hook fails open too
  auto [open_reply, open_ms] = timed_pub(*a, "downopen:x", "d1");
  EXPECT_EQ(op_of(open_reply), "ack") << open_reply;
  EXPECT_EQ(json_int(open_reply, "seq"), 1);
  a->join("downclosed:x");
  auto [closed_reply, closed_ms] = timed_pub(*a, "downclosed:x", "d2");
  EXPECT_EQ(json_str(closed_reply, "code"), "unavailable") << closed_reply;
  EXPECT_LT(closed_ms, 1000);
  EXPECT_TRUE(http_history_all(server_->http_port(), "downclosed:x").empty());
  EXPECT_GE(metric("parley_hook_failures_total", "demo/downclosed/pub"), 1);
  EXPECT_GE(metric("parley_hook_failed_open_total", "demo/downopen/pub"), 1);
}

TEST_F(Hooks, AFullHookIsAnsweredBackpressure) {
  auto a = user("u1");
  auto b = user("u2");
  a->join("narrow:x");
  b->join("narrow:x");
  a->send(pub_frame("narrow:x", "n1", "1", 1));  // holds the one slot for 600 ms
  std::this_thread::sleep_for(100ms);            // let it reach the app server
  auto [reply, ms] = timed_pub(*b, "narrow:x", "n2");
  EXPECT_EQ(json_str(reply, "code"), "backpressure") << reply;
  EXPECT_GT(json_int(reply, "retry_ms").value_or(0), 0);
  EXPECT_LT(ms, 400);
  EXPECT_EQ(json_int(a->expect("ack", 3s), "seq"), 1);
  EXPECT_GE(metric("parley_hook_backpressure_total", "demo/narrow/pub"), 1);
}

TEST_F(Hooks, FramesBehindAHookKeepTheirOrder) {
  auto a = user("u1");
  // join, then pubs pipelined behind the join's and each other's hook requests.
  a->send(join_frame("gate:order", std::nullopt, 1));
  for (int i = 0; i < 5; ++i) a->send(pub_frame("gate:order", "o" + std::to_string(i), "1", 10 + i));
  EXPECT_EQ(op_of(a->expect("joined")), "joined");
  for (int i = 0; i < 5; ++i) {
    const std::string ack = a->expect("ack");
    EXPECT_EQ(json_int(ack, "rid"), 10 + i) << ack;
    EXPECT_EQ(json_int(ack, "seq"), i + 1);
  }
}

TEST_F(Hooks, ADeniedHelloIsClosedWithTheAppsCode) {
  auto c = Client::connect(server_->http_port());
  const std::string e = c->hello(ServerProcess::token("banned"));
  EXPECT_EQ(op_of(e), "error") << e;
  EXPECT_EQ(json_str(e, "code"), "forbidden");
  EXPECT_EQ(json_str(e, "msg"), "banned from this game");
  EXPECT_EQ(c->wait_closed(), 4001);
  EXPECT_GE(metric("parley_hook_denied_total", "demo/connect"), 1);
  EXPECT_GE(metric("parley_hook_allowed_total", "demo/connect"), 1);  // the other tests' users
}

}  // namespace
}  // namespace parley::testing
