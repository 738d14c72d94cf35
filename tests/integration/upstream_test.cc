// Upstream forwarding (PROTOCOL.md "Upstream forwarding") and `up`, over real
// sockets: the real server forwards to an app server written in the test
// (support/app_server.h) that records every request and fails, delays or
// hangs up on the ones the test chooses.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "support/app_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

// The demo tenant with namespace `world` forwarding to `url` (plus `world_extra`
// lines), `plain` without upstream, and `extra_ns` appended as is.
ServerSpec upstream_spec(const std::string& url, const std::string& world_extra = "",
                         const std::string& extra_ns = "") {
  std::string t = std::string("[tenants.demo]\nsecret = \"") + kDemoSecret + "\"\napi_key = \"" +
                  kDemoApiKey + "\"\npublish_per_conn_sec = 0\npublish_per_sec = 0\n" +
                  "\n[tenants.demo.namespaces.world]\ndurable = false\n" +
                  (world_extra.find("tick_ms") == std::string::npos ? "tick_ms = 20\n" : "") +
                  "upstream = \"" + url + "\"\n" + world_extra +
                  "\n[tenants.demo.namespaces.plain]\ndurable = false\n" + extra_ns;
  return spec_with_tenants(t);
}

std::string up_frame(const std::string& ch, const std::string& body, int rid = 0) {
  std::string f = R"({"op":"up","ch":")" + ch + R"(","body":)" + body;
  if (rid) f += R"(,"rid":)" + std::to_string(rid);
  return f + "}";
}

// The value of the metric line starting with `series` (e.g.
// `parley_upstream_dropped_total{upstream="demo/world"}`), or -1.
double metric(uint16_t port, const std::string& series) {
  const auto r = http_request(port, "GET", "/metrics");
  const std::string key = series + " ";
  const auto at = r.body.find("\n" + key);
  if (at == std::string::npos) return -1;
  return std::stod(r.body.substr(at + 1 + key.size()));
}

// Waits (up to 10 s) for the metric to reach `value`; returns its last value.
// The app server records a request before the server has read its answer.
double wait_metric(uint16_t port, const std::string& series, double value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  double v = metric(port, series);
  while (v < value && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = metric(port, series);
  }
  return v;
}

std::string world_series(const std::string& name) {
  return name + R"({upstream="demo/world"})";
}

struct Connected {
  std::unique_ptr<Client> client;
  std::string conn;  // from welcome
};

Connected connect_user(const ServerProcess& s, const std::string& user) {
  auto c = Client::connect(s.http_port());
  const std::string w = c->hello(ServerProcess::token(user));
  EXPECT_EQ(op_of(w), "welcome") << w;
  return {std::move(c), json_str(w, "conn").value_or("")};
}

std::vector<AppEvent> of_type(const std::vector<AppEvent>& evs, const std::string& type) {
  std::vector<AppEvent> out;
  for (const auto& e : evs) {
    if (e.type == type) out.push_back(e);
  }
  return out;
}

TEST(Upstream, JoinUpLeaveArriveInOrderWithTheDocumentedFieldsAndHeaders) {
  AppServer app;
  ServerProcess server(upstream_spec(app.url("/events?k=1")));
  server.start();
  const int64_t before = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  auto a = connect_user(server, "u1");
  a.client->join("world:7");
  a.client->send(up_frame("world:7", R"({"a":[1,2]})"));
  a.client->send(up_frame("world:7", R"("hello")"));
  a.client->send(pub_frame("world:7", "m1", R"({"not":"forwarded"})", 5));
  EXPECT_EQ(op_of(a.client->expect("ack")), "ack");
  a.client->send(R"({"op":"leave","ch":"world:7","rid":6})");
  EXPECT_EQ(op_of(a.client->expect("left")), "left");
  auto b = connect_user(server, "u2");
  b.client->join("world:7");
  b.client->join("world:8");
  b.client->close();  // a disconnect leaves every channel joined

  ASSERT_TRUE(app.wait_for([](const auto& evs) { return evs.size() >= 8; }))
      << app.requests().size() << " requests\n" << server.log();
  const auto evs = app.accepted_events();
  const int64_t after = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_EQ(evs.size(), 8u);
  // world:7 in order; world:8 (another shard, perhaps) has its own order.
  std::vector<std::string> w7;
  for (const auto& e : evs) {
    if (e.ch == "world:7") w7.push_back(e.type + ":" + e.user);
  }
  EXPECT_EQ(w7, (std::vector<std::string>{"join:u1", "up:u1", "up:u1", "leave:u1", "join:u2",
                                          "leave:u2"}));
  std::vector<std::string> w8;
  for (const auto& e : evs) {
    if (e.ch == "world:8") w8.push_back(e.type + ":" + e.user);
  }
  EXPECT_EQ(w8, (std::vector<std::string>{"join:u2", "leave:u2"}));
  for (const auto& e : evs) {
    EXPECT_EQ(e.tenant, "demo");
    EXPECT_EQ(e.conn, e.user == "u1" ? a.conn : b.conn);
    EXPECT_GE(e.ts, before);
    EXPECT_LE(e.ts, after);
  }
  const auto ups = of_type(evs, "up");
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[0].body, R"({"a":[1,2]})");
  EXPECT_EQ(ups[1].body, R"("hello")");
  EXPECT_TRUE(of_type(evs, "msg").empty()) << "msg is not in the default forward list";

  const auto reqs = app.requests();
  ASSERT_FALSE(reqs.empty());
  for (const auto& r : reqs) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/events?k=1");
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    EXPECT_EQ(r.headers.at("authorization"), std::string("Bearer ") + kDemoApiKey);
    EXPECT_EQ(r.headers.at("x-parley-tenant"), "demo");
    EXPECT_EQ(r.headers.at("x-parley-namespace"), "world");
    EXPECT_FALSE(r.headers.at("x-parley-batch").empty());
    EXPECT_EQ(r.headers.at("x-parley-attempt"), "1");
  }
  // Keep-alive: far fewer connections than requests (one per loop at most).
  EXPECT_LE(app.connections(), 2u);
  EXPECT_EQ(wait_metric(server.http_port(), world_series("parley_upstream_events_sent_total"), 8), 8);
}

// A client that pipelines join, up and state without waiting for `joined`:
// the app server still hears the join first (the join event waits for the
// store's answer; what the client sent after it waits with it).
TEST(Upstream, EventsPipelinedBehindAJoinArriveAfterTheJoinEvent) {
  AppServer app;
  ServerProcess server(upstream_spec(app.url("/events"), "forward = [\"join\", \"leave\", \"up\", \"state\"]\n"));
  server.start();
  auto a = connect_user(server, "u1");
  a.client->send(R"({"op":"join","ch":"world:p","rid":2})");
  a.client->send(up_frame("world:p", R"({"n":1})"));
  a.client->send(R"({"op":"state","ch":"world:p","key":"pos","body":{"x":1}})");
  a.client->send(up_frame("world:p", R"({"n":2})"));
  EXPECT_EQ(op_of(a.client->expect("joined")), "joined");
  ASSERT_TRUE(app.wait_for([](const auto& evs) { return evs.size() >= 4; })) << server.log();
  std::vector<std::string> got;
  for (const auto& e : app.accepted_events()) got.push_back(e.type);
  EXPECT_EQ(got, (std::vector<std::string>{"join", "up", "state", "up"}));
}

TEST(Upstream, UpPassthroughKeepsAnyBodyWithItsUserAndConnection) {
  AppServer app;
  ServerProcess server(upstream_spec(app.url()));
  server.start();
  auto a = connect_user(server, "player-9");
  a.client->join("world:pass");
  const std::vector<std::string> bodies = {
      R"({"type":"trade","items":[{"id":7,"n":2}],"note":"h\u00e9 \"q\""})",
      R"([1,"x",null,{"k":[]}])", R"("just text")", "42", "1.50", "true", "null", "{}"};
  for (const auto& b : bodies) a.client->send(up_frame("world:pass", b));
  ASSERT_TRUE(app.wait_for([&](const auto& evs) { return of_type(evs, "up").size() == bodies.size(); }));
  const auto ups = of_type(app.accepted_events(), "up");
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_EQ(ups[i].user, "player-9");
    EXPECT_EQ(ups[i].conn, a.conn);
    EXPECT_EQ(ups[i].ch, "world:pass");
  }
  // Byte for byte as the client wrote them (escapes and number text included).
  std::string raw;
  for (const auto& r : app.requests()) raw += r.body;
  size_t at = 0;
  for (const auto& b : bodies) {
    at = raw.find(",\"body\":" + b + "}", at);
    ASSERT_NE(at, std::string::npos) << b << " not found in order in " << raw;
  }
}

TEST(Upstream, StateAndMsgAreForwardedWhenListedButTheApisOwnPublishIsNot) {
  AppServer app;
  ServerProcess server(upstream_spec(app.url(), "forward = [\"state\",\"msg\"]\n"));
  server.start();
  auto a = connect_user(server, "mover");
  a.client->join("world:st");  // join is not listed: not forwarded
  a.client->send(R"({"op":"state","ch":"world:st","key":"pos","body":{"x":1,"y":2}})");
  const auto api = http_request(server.http_port(), "POST", "/v1/publish",
                                R"({"ch":"world:st","body":{"from":"app"}})", kDemoApiKey);
  ASSERT_EQ(api.status, 200) << api.body;
  a.client->send(pub_frame("world:st", "p1", R"({"hi":1})", 7));
  ASSERT_EQ(op_of(a.client->expect("ack")), "ack");
  ASSERT_TRUE(app.wait_for([](const auto& evs) { return evs.size() >= 2; }));
  std::this_thread::sleep_for(100ms);  // nothing else comes
  const auto evs = app.accepted_events();
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].type, "state");
  EXPECT_EQ(evs[0].key, "pos");
  EXPECT_EQ(evs[0].body, R"({"x":1,"y":2})");
  EXPECT_EQ(evs[0].conn, a.conn);
  EXPECT_EQ(evs[1].type, "msg");
  EXPECT_EQ(evs[1].seq, 2);  // seq 1 was the API's publish, not echoed upstream
  EXPECT_EQ(evs[1].id, "p1");
  EXPECT_EQ(evs[1].user, "mover");
}

TEST(Upstream, EditAndDeleteAreForwardedWhereListedInSeqOrderButTheApisOwnAreNot) {
  AppServer app;
  // talk forwards msg, edit and delete; chat only msg (the default namespace's
  // rules otherwise: durable, so the edits read their targets from the store).
  const std::string ns = "\n[tenants.demo.namespaces.talk]\nupstream = \"" + app.url() +
                         "\"\nforward = [\"msg\", \"edit\", \"delete\"]\n"
                         "\n[tenants.demo.namespaces.chat]\nupstream = \"" + app.url() +
                         "\"\nforward = [\"msg\"]\n";
  ServerProcess server(upstream_spec(app.url(), "", ns));
  server.start();
  auto a = connect_user(server, "alice");
  auto ask = [&](const std::string& frame, const std::string& reply) {
    a.client->send(frame);
    return a.client->expect(reply);
  };
  for (const std::string ch : {"talk:1", "chat:1"}) {
    a.client->join(ch);
    ASSERT_EQ(op_of(ask(pub_frame(ch, "p1", R"({"t":"tpyo"})", 2), "ack")), "ack");
    ASSERT_EQ(op_of(ask(pub_frame(ch, "p2", R"({"t":"oops"})", 3), "ack")), "ack");
    const std::string e = ask(R"({"op":"edit","rid":4,"ch":")" + ch + R"(","target":1,"body":{"t":"typo"}})", "edited");
    ASSERT_EQ(json_int(e, "seq"), 3) << e;
    const std::string d = ask(R"({"op":"delete","rid":5,"ch":")" + ch + R"(","target":2})", "deleted");
    ASSERT_EQ(json_int(d, "seq"), 4) << d;
  }
  const auto api = http_request(server.http_port(), "POST", "/v1/edit",
                                R"({"ch":"talk:1","target":1,"body":{"t":"by the game"}})", kDemoApiKey);
  ASSERT_EQ(api.status, 200) << api.body;
  ASSERT_TRUE(app.wait_for([](const auto& evs) { return evs.size() >= 6; })) << server.log();
  std::this_thread::sleep_for(100ms);  // nothing else comes
  const auto evs = app.accepted_events();
  std::vector<std::string> talk, chat;
  for (const auto& e : evs) {
    (e.ch == "talk:1" ? talk : chat)
        .push_back(e.type + " " + std::to_string(e.seq) + " " + std::to_string(e.target) + " " + e.body);
  }
  EXPECT_EQ(talk, (std::vector<std::string>{R"(msg 1 0 {"t":"tpyo"})", R"(msg 2 0 {"t":"oops"})",
                                            R"(edit 3 1 {"t":"typo"})", "delete 4 2 "}));
  EXPECT_EQ(chat, (std::vector<std::string>{R"(msg 1 0 {"t":"tpyo"})", R"(msg 2 0 {"t":"oops"})"}));
  for (const auto& e : evs) {
    EXPECT_EQ(e.user, "alice");
    EXPECT_EQ(e.conn, a.conn);
  }
}

TEST(Upstream, UpIsRefusedWhereNothingWouldReceiveIt) {
  AppServer app;
  ServerProcess server(upstream_spec(
      app.url(), "",
      "\n[tenants.demo.namespaces.nofwd]\ndurable = false\nupstream = \"" + app.url() +
          "\"\nforward = [\"join\"]\n"));
  server.start();
  auto a = connect_user(server, "u1");
  a.client->join("plain:1");
  a.client->send(up_frame("plain:1", "{}", 3));
  auto e = a.client->expect("error");
  EXPECT_EQ(json_str(e, "code"), "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 3);
  a.client->join("nofwd:1");
  a.client->send(up_frame("nofwd:1", "{}", 4));
  e = a.client->expect("error");
  EXPECT_EQ(json_str(e, "code"), "bad_request");
  a.client->send(up_frame("world:1", "{}", 5));  // not joined
  e = a.client->expect("error");
  EXPECT_EQ(json_str(e, "code"), "forbidden");
}

TEST(Upstream, EachChannelStaysInOrderWhileTheAppServerFailsRequests) {
  // Every third request answers 500, and early on others hang up unanswered:
  // each failed batch must come again (same batch id, next attempt) before
  // anything newer of its channels.
  AppServer app([](size_t i, const AppRequest&) {
    if (i % 3 == 1) return AppAnswer{500};
    if (i % 3 == 2 && i < 30) return AppAnswer{200, 0, true};
    return AppAnswer{200};
  });
  ServerProcess server(upstream_spec(app.url(), "tick_ms = 5\nforward = [\"join\",\"leave\",\"msg\",\"up\"]\n"));
  server.start();
  const std::vector<std::string> chans = {"world:a", "world:b", "world:c"};
  std::vector<Connected> pubs;
  for (const auto& ch : chans) {
    pubs.push_back(connect_user(server, "pub-" + ch.substr(6)));
    pubs.back().client->join(ch);
  }
  constexpr int kN = 300;
  for (int i = 1; i <= kN; ++i) {
    for (size_t c = 0; c < chans.size(); ++c) {
      pubs[c].client->send(pub_frame(chans[c], "m" + std::to_string(i), "{\"i\":" + std::to_string(i) + "}"));
      if (i % 50 == 0) pubs[c].client->send(up_frame(chans[c], "{\"after\":" + std::to_string(i) + "}"));
    }
  }
  for (auto& p : pubs) {
    for (int i = 1; i <= kN; ++i) ASSERT_EQ(op_of(p.client->expect("ack", 10s)), "ack");
  }
  ASSERT_TRUE(app.wait_for(
      [&](const auto& evs) { return of_type(evs, "msg").size() >= kN * chans.size(); }, 30s))
      << of_type(app.accepted_events(), "msg").size() << " msgs\n" << server.log();
  const auto evs = app.accepted_events();
  for (const auto& ch : chans) {
    std::vector<std::string> seen;
    std::vector<int64_t> seqs;
    for (const auto& e : evs) {
      if (e.ch != ch) continue;
      if (e.type == "msg") {
        seqs.push_back(e.seq);
        EXPECT_EQ(e.id, "m" + std::to_string(e.seq));
        EXPECT_EQ(e.body, "{\"i\":" + std::to_string(e.seq) + "}");
        seen.push_back("msg");
      } else {
        seen.push_back(e.type + (e.type == "up" ? e.body : ""));
      }
    }
    EXPECT_EQ(seqs, seq_range(1, kN)) << ch;
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front(), "join") << ch;
    // Each up follows the msg it was sent after.
    size_t msgs = 0;
    for (const auto& s : seen) {
      if (s == "msg") ++msgs;
      if (s.starts_with("up")) {
        EXPECT_EQ(s, "up{\"after\":" + std::to_string(msgs) + "}") << ch;
      }
    }
  }
  // Failed batches were retried as the same batch, with the next attempt number.
  const auto reqs = app.requests();
  size_t failed = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].status >= 200 && reqs[i].status < 300) continue;
    ++failed;
    const std::string batch = reqs[i].headers.at("x-parley-batch");
    const int attempt = std::stoi(reqs[i].headers.at("x-parley-attempt"));
    bool retried = false;
    for (size_t j = i + 1; j < reqs.size() && !retried; ++j) {
      retried = reqs[j].headers.at("x-parley-batch") == batch &&
                std::stoi(reqs[j].headers.at("x-parley-attempt")) == attempt + 1;
    }
    EXPECT_TRUE(retried) << "request " << i << " (batch " << batch << ") was not retried";
  }
  // How many requests the load takes depends on how much each tick batches (a
  // quiet machine batches more), so only "some failed, each was retried" is fixed.
  EXPECT_GE(failed, 1u);
  EXPECT_GE(wait_metric(server.http_port(), world_series("parley_upstream_requests_failed_total"), failed), failed);
  EXPECT_GE(wait_metric(server.http_port(), world_series("parley_upstream_retries_total"), failed), failed);
  EXPECT_EQ(metric(server.http_port(), world_series("parley_upstream_dropped_total")), 0);
}

TEST(Upstream, EventsOfOneTickGoInOneRequest) {
  AppServer app;
  ServerProcess server(upstream_spec(app.url(), "tick_ms = 300\n"));
  server.start();
  auto a = connect_user(server, "batcher");
  a.client->join("world:tick");
  std::string burst;
  for (int i = 0; i < 40; ++i) a.client->send(up_frame("world:tick", std::to_string(i)));
  ASSERT_TRUE(app.wait_for([](const auto& evs) { return of_type(evs, "up").size() == 40; }));
  const auto reqs = app.requests();
  // join + 40 ups, sent within a few ms: one tick's batch (two if the tick
  // fell between the join and the burst).
  EXPECT_LE(reqs.size(), 2u);
  EXPECT_EQ(parse_events(reqs.back().body).size() + (reqs.size() == 2 ? 1 : 0), 41u);
  const auto ups = of_type(app.accepted_events(), "up");
  for (int i = 0; i < 40; ++i) EXPECT_EQ(ups[i].body, std::to_string(i));
}

TEST(Upstream, OverflowDropsTheOldestEventsAndCountsThem) {
  const uint16_t port = dead_port();
  ServerProcess server(upstream_spec("http://127.0.0.1:" + std::to_string(port) + "/events",
                                     "tick_ms = 300\nupstream_queue = 10\n"));
  server.start();
  auto a = connect_user(server, "flood");
  a.client->join("world:flood");
  for (int i = 0; i < 30; ++i) a.client->send(up_frame("world:flood", std::to_string(i)));
  a.client->send(R"({"op":"ping","rid":9})");
  EXPECT_EQ(op_of(a.client->expect("pong")), "pong") << "the client is not held up";
  // join + 30 ups into a queue of 10: the 21 oldest go.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (metric(server.http_port(), world_series("parley_upstream_dropped_total")) < 21 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(metric(server.http_port(), world_series("parley_upstream_dropped_total")), 21);
  EXPECT_EQ(metric(server.http_port(), world_series("parley_upstream_queued")), 10);
  while (metric(server.http_port(), world_series("parley_upstream_requests_failed_total")) < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GT(metric(server.http_port(), world_series("parley_upstream_requests_failed_total")), 0);
  // The app server comes up: it gets exactly the 10 newest, in order.
  AppServer app({}, port);
  ASSERT_TRUE(app.wait_for([](const auto& evs) { return evs.size() >= 10; }, 20s));
  const auto evs = app.accepted_events();
  ASSERT_EQ(evs.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(evs[i].type, "up");
    EXPECT_EQ(evs[i].body, std::to_string(20 + i));
  }
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (metric(server.http_port(), world_series("parley_upstream_queued")) != 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(metric(server.http_port(), world_series("parley_upstream_queued")), 0);
  EXPECT_EQ(wait_metric(server.http_port(), world_series("parley_upstream_events_sent_total"), 10), 10);
}

// Ack latencies (ms) of `n` pubs per client, sent one at a time round-robin
// across the clients so that machine noise hits them alike.
std::vector<std::vector<double>> ack_latencies(std::vector<Connected>& cs,
                                               const std::vector<std::string>& chans, int n) {
  std::vector<std::vector<double>> out(cs.size());
  for (int i = 0; i < n; ++i) {
    for (size_t c = 0; c < cs.size(); ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      cs[c].client->send(pub_frame(chans[c], "l" + std::to_string(i), R"({"x":1})", i + 1));
      const auto ack = cs[c].client->expect("ack");
      EXPECT_EQ(op_of(ack), "ack");
      out[c].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

TEST(Upstream, ADeadOrSlowAppServerDoesNotSlowClients) {
  // One server, three namespaces forwarding msg: to nothing (connection
  // refused), to an app server that answers after 2 s, and (baseline) none.
  AppServer slow([](size_t, const AppRequest&) { return AppAnswer{200, 2000}; });
  const std::string dead = "http://127.0.0.1:" + std::to_string(dead_port()) + "/events";
  const std::string fwd = "forward = [\"join\",\"leave\",\"msg\",\"up\"]\n";
  ServerProcess server(upstream_spec(
      dead, fwd,
      "\n[tenants.demo.namespaces.slow]\ndurable = false\nupstream = \"" + slow.url() + "\"\n" + fwd +
          "\n[tenants.demo.namespaces.none]\ndurable = false\n"));
  server.start();
  const std::vector<std::string> chans = {"world:lat", "slow:lat", "none:lat"};
  std::vector<Connected> cs;
  for (const auto& ch : chans) {
    cs.push_back(connect_user(server, "lat-" + ch.substr(0, ch.find(':'))));
    cs.back().client->join(ch);
  }
  ack_latencies(cs, chans, 50);  // warm-up
  const auto lat = ack_latencies(cs, chans, 400);
  const double none_p99 = quantile(lat[2], 0.99);
  for (size_t c = 0; c < 2; ++c) {
    const double p50 = quantile(lat[c], 0.5), p99 = quantile(lat[c], 0.99);
    std::printf("ack latency %-10s p50 %.3f ms p99 %.3f ms (no upstream: p50 %.3f p99 %.3f)\n",
                chans[c].c_str(), p50, p99, quantile(lat[2], 0.5), none_p99);
    RecordProperty(chans[c] + "_p99_ms", std::to_string(p99));
    // Same server, same loops: only noise separates them.
    EXPECT_LE(p99, 3 * none_p99 + 5.0) << chans[c];
  }
  // The events are really held for those app servers, not lost silently.
  EXPECT_GT(metric(server.http_port(), world_series("parley_upstream_requests_failed_total")), 0);
  EXPECT_GT(metric(server.http_port(), world_series("parley_upstream_queued")), 0);
  EXPECT_GT(metric(server.http_port(), R"(parley_upstream_queued{upstream="demo/slow"})"), 0);
}

}  // namespace
}  // namespace parley::testing
