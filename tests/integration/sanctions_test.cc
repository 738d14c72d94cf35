// Sanctions (PROTOCOL.md "Sanctions: mute, kick, ban") over real sockets:
// the HTTP API and the admin page's paths tell the real server, whose
// clients' ops are then refused, removed or let through again when the time
// is up; the per-channel publish rate; and, on two `parley serve` processes
// sharing one redis-server, every sanction told to one node enforced on the
// other (and on a node started after it).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "common/clock.h"
#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAdminKey = "admin-key-moderation-0123456789";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

HttpResult api(uint16_t port, const std::string& method, const std::string& path, const std::string& body = "") {
  return http_request(port, method, path, body, kDemoApiKey);
}

std::string pub(Client& c, const std::string& ch, const std::string& id, int rid) {
  c.send(pub_frame(ch, id, R"({"t":"hi"})", rid));
  return ack_or_error(c);
}

// What a `join` answers: its joined or error object.
std::string join_answer(Client& c, const std::string& ch, int rid) {
  c.send(join_frame(ch, std::nullopt, rid));
  for (;;) {
    auto o = c.next(5s);
    if (!o) return "";
    if ((op_of(*o) == "joined" || op_of(*o) == "error") && json_int(*o, "rid") == rid) return *o;
  }
}

// Retries `attempt` (every 20 ms, at most 5 s) until `done` holds for what it
// answers: another node hears of a sanction a few milliseconds after it is set.
std::string until_answer(const std::function<std::string()>& attempt,
                         const std::function<bool(const std::string&)>& done) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  std::string last;
  while (std::chrono::steady_clock::now() < end) {
    last = attempt();
    if (done(last)) return last;
    std::this_thread::sleep_for(20ms);
  }
  return last;
}

bool refused(const std::string& answer, const std::string& msg) {
  return op_of(answer) == "error" && json_str(answer, "code") == "forbidden" && json_str(answer, "msg") == msg;
}

ServerSpec single_node_spec() {
  ServerSpec spec = spec_with_tenants(default_tenants_toml("publish_per_sec = 0\npublish_per_conn_sec = 0\n"),
                                      std::string("admin_key = \"") + kAdminKey + "\"");
  // In memory: ten pubs take well under the 200 ms a token of 5/s takes to come back.
  spec.tenants_toml += "\n[tenants.demo.namespaces.slow]\nchannel_pub_rate = 5\ndurable = false\n";
  return spec;
}

class Sanctions : public SharedServerTest<Sanctions> {
 public:
  static ServerSpec server_spec() { return single_node_spec(); }

 protected:
  static uint16_t port() { return server_->http_port(); }
};

TEST_F(Sanctions, AMuteInAChannelRefusesPubStateAndUpThereAndTakesNoSeq) {
  auto alice = connect_as("m-alice");
  auto bob = connect_as("m-bob");
  ASSERT_EQ(op_of(alice->join("chat:m1")), "joined");
  ASSERT_EQ(op_of(alice->join("chat:m2")), "joined");
  ASSERT_EQ(op_of(bob->join("chat:m1")), "joined");

  const int64_t before = wall_ms();
  auto r = api(port(), "POST", "/v1/mute", R"({"user":"m-alice","ch":"chat:m1","for_ms":60000})");
  const int64_t after = wall_ms();
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t until = json_int(r.body, "until").value_or(0);
  EXPECT_GE(until, before + 60000);
  EXPECT_LE(until, after + 60000);

  std::string a = pub(*alice, "chat:m1", "x1", 2);
  EXPECT_TRUE(refused(a, "muted")) << a;
  EXPECT_EQ(json_int(a, "rid"), 2);
  const int64_t retry = json_int(a, "retry_ms").value_or(0);
  EXPECT_GT(retry, 55000) << a;
  EXPECT_LE(retry, 60000) << a;
  alice->send(R"({"op":"state","ch":"chat:m1","key":"pos","body":{},"rid":3})");
  a = ack_or_error(*alice);
  EXPECT_TRUE(refused(a, "muted")) << a;
  // Refused before anything else of it: the namespace has no upstream, which
  // would be bad_request.
  alice->send(R"({"op":"up","ch":"chat:m1","body":{},"rid":4})");
  a = ack_or_error(*alice);
  EXPECT_TRUE(refused(a, "muted")) << a;
  // Only that channel.
  a = pub(*alice, "chat:m2", "y1", 5);
  EXPECT_EQ(op_of(a), "ack") << a;
  // Still a member: bob's message reaches alice.
  EXPECT_EQ(op_of(pub(*bob, "chat:m1", "b1", 6)), "ack");
  until_msg(*alice, "b1");
  // Listed, and counted.
  r = api(port(), "GET", "/v1/moderation?user=m-alice");
  EXPECT_EQ(r.body, R"({"mutes":[{"user":"m-alice","ch":"chat:m1","until":)" + std::to_string(until) +
                        R"(}],"bans":[]})");
  EXPECT_GE(metric_value(port(), "parley_mutes_enforced_total"), 3);
  EXPECT_GE(metric_value(port(), "parley_mutes_active{tenant=\"demo\"}"), 1);

  // Lifted: alice's next pub takes seq 2, right after bob's 1 (the refused one took none).
  r = api(port(), "POST", "/v1/mute", R"({"user":"m-alice","ch":"chat:m1","for_ms":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"until":0})");
  a = pub(*alice, "chat:m1", "x2", 7);
  EXPECT_EQ(op_of(a), "ack") << a;
  EXPECT_EQ(json_int(a, "seq"), 2) << a;
  alice->send(R"({"op":"up","ch":"chat:m1","body":{},"rid":8})");
  a = ack_or_error(*alice);
  EXPECT_EQ(json_str(a, "code"), "bad_request") << a;
}

TEST_F(Sanctions, ATenantWideMuteCoversEveryChannelAndEveryConnectionUntilItEnds) {
  auto carol = connect_as("m-carol");
  ASSERT_EQ(op_of(carol->join("chat:t1")), "joined");
  auto r = api(port(), "POST", "/v1/mute", R"({"user":"m-carol","for_ms":1500})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(refused(pub(*carol, "chat:t1", "c1", 2), "muted"));
  // A connection opened after it, in another channel.
  auto carol2 = connect_as("m-carol");
  ASSERT_EQ(op_of(carol2->join("chat:t2")), "joined");
  const std::string a = pub(*carol2, "chat:t2", "c2", 2);
  ASSERT_TRUE(refused(a, "muted")) << a;
  r = api(port(), "GET", "/v1/moderation?user=m-carol");
  EXPECT_TRUE(has(r.body, R"("mutes":[{"user":"m-carol","until":)")) << r.body;  // no ch: tenant-wide
  // Its end: retry_ms says when.
  std::this_thread::sleep_for(std::chrono::milliseconds(json_int(a, "retry_ms").value_or(1500) + 50));
  EXPECT_EQ(op_of(pub(*carol, "chat:t1", "c3", 3)), "ack");
  EXPECT_EQ(op_of(pub(*carol2, "chat:t2", "c4", 3)), "ack");
  r = api(port(), "GET", "/v1/moderation?user=m-carol");
  EXPECT_EQ(r.body, R"({"mutes":[],"bans":[]})");
}

TEST_F(Sanctions, AKickRemovesTheUserNowWithTheReasonAndPresenceLeave) {
  auto dave = connect_as("m-dave");
  auto dave2 = connect_as("m-dave");
  auto erin = connect_as("m-erin");
  ASSERT_EQ(op_of(dave->join("chat:k")), "joined");
  ASSERT_EQ(op_of(dave2->join("chat:k")), "joined");
  ASSERT_EQ(op_of(dave->join("chat:k-other")), "joined");
  ASSERT_EQ(op_of(erin->join("chat:k")), "joined");
  auto r = api(port(), "POST", "/v1/kick", R"({"user":"m-dave","ch":"chat:k","reason":"spamming links"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"kicked":2})");
  for (auto* c : {dave.get(), dave2.get()}) {
    EXPECT_EQ(c->expect("kicked"), R"({"op":"kicked","ch":"chat:k","reason":"spamming links"})");
  }
  const std::string p = erin->expect("presence");
  EXPECT_EQ(json_raw(p, "leave"), R"(["m-dave"])") << p;
  // Out of the channel: a pub needs a join again; the other channel is kept.
  EXPECT_EQ(json_str(pub(*dave, "chat:k", "d1", 5), "code"), "forbidden");
  EXPECT_EQ(op_of(pub(*dave, "chat:k-other", "d2", 6)), "ack");
  r = api(port(), "GET", "/v1/presence?ch=chat:k");
  EXPECT_EQ(r.body, R"({"members":["m-erin"]})");
  // Not banned: a join is let in again. Nobody joined: nobody kicked.
  EXPECT_EQ(op_of(join_answer(*dave, "chat:k", 7)), "joined");
  r = api(port(), "POST", "/v1/kick", R"({"user":"m-nobody","ch":"chat:k"})");
  EXPECT_EQ(r.body, R"({"kicked":0})");
  EXPECT_GE(metric_value(port(), "parley_kicks_total"), 2);
}

TEST_F(Sanctions, ABanKicksAndRefusesJoinsOfThatChannelUntilItEnds) {
  auto frank = connect_as("m-frank");
  ASSERT_EQ(op_of(frank->join("chat:b")), "joined");
  auto r = api(port(), "POST", "/v1/ban", R"({"user":"m-frank","ch":"chat:b","for_ms":1500,"reason":"cheating"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_int(r.body, "kicked"), 1) << r.body;
  EXPECT_EQ(frank->expect("kicked"), R"({"op":"kicked","ch":"chat:b","reason":"cheating"})");
  std::string j = join_answer(*frank, "chat:b", 3);
  EXPECT_TRUE(refused(j, "banned from this channel")) << j;
  EXPECT_GT(json_int(j, "retry_ms").value_or(0), 1000) << j;
  // Another channel, and another user, are let in.
  EXPECT_EQ(op_of(join_answer(*frank, "chat:b2", 4)), "joined");
  auto gina = connect_as("m-gina");
  EXPECT_EQ(op_of(join_answer(*gina, "chat:b", 2)), "joined");
  // A new connection of his is refused as well.
  auto frank2 = connect_as("m-frank");
  EXPECT_TRUE(refused(join_answer(*frank2, "chat:b", 2), "banned from this channel"));
  EXPECT_GE(metric_value(port(), "parley_bans_enforced_total"), 2);
  EXPECT_EQ(metric_value(port(), "parley_bans_active{tenant=\"demo\"}"), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(json_int(j, "retry_ms").value_or(1500) + 50));
  EXPECT_EQ(op_of(join_answer(*frank, "chat:b", 5)), "joined");
  EXPECT_EQ(metric_value(port(), "parley_bans_active{tenant=\"demo\"}"), 0);  // none in force (every tenant has its sample)
  // A ban lifted before its end lets in at once.
  r = api(port(), "POST", "/v1/ban", R"({"user":"m-gina","ch":"chat:b3","for_ms":600000})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(refused(join_answer(*gina, "chat:b3", 3), "banned from this channel"));
  r = api(port(), "POST", "/v1/ban", R"({"user":"m-gina","ch":"chat:b3","for_ms":0})");
  EXPECT_EQ(r.body, R"({"until":0,"kicked":0})");
  EXPECT_EQ(op_of(join_answer(*gina, "chat:b3", 4)), "joined");
}

TEST_F(Sanctions, AChannelOverItsPubRateIsRefusedRateLimitedAndTakesNoSeq) {
  // channel_pub_rate = 5 in namespace "slow": the channel's, whoever publishes.
  auto a = connect_as("r-a");
  auto b = connect_as("r-b");
  ASSERT_EQ(op_of(a->join("slow:room")), "joined");
  ASSERT_EQ(op_of(b->join("slow:room")), "joined");
  ASSERT_EQ(op_of(a->join("slow:other")), "joined");
  std::vector<int64_t> seqs;
  std::string limited;
  for (int i = 0; i < 10; ++i) {
    Client& c = i % 2 ? *b : *a;
    const std::string r = pub(c, "slow:room", "p" + std::to_string(i), 10 + i);
    if (op_of(r) == "ack") {
      seqs.push_back(json_int(r, "seq").value_or(-1));
    } else {
      EXPECT_EQ(json_str(r, "code"), "rate_limited") << r;
      EXPECT_EQ(json_str(r, "msg"), "channel publish rate exceeded") << r;
      EXPECT_GE(json_int(r, "retry_ms").value_or(0), 1) << r;
      limited = r;
    }
  }
  // The burst is one second of the rate; ten pubs in well under a second.
  EXPECT_EQ(seqs, seq_range(1, 5));
  ASSERT_FALSE(limited.empty());
  // Another channel of the namespace has its own bucket; the API is not counted.
  EXPECT_EQ(op_of(pub(*a, "slow:other", "o1", 30)), "ack");
  auto r = api(port(), "POST", "/v1/publish", R"({"ch":"slow:room","body":{}})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_int(r.body, "seq"), 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(json_int(limited, "retry_ms").value_or(200) + 20));
  const std::string again = pub(*a, "slow:room", "late", 31);
  EXPECT_EQ(json_int(again, "seq"), 7) << again;
  EXPECT_GE(metric_value(port(), "parley_channel_rate_limited_total"), 5);
}

TEST_F(Sanctions, BadInputToThePathsIsAnsweredWithCodesAndChangesNothing) {
  const std::string long_user(65, 'u');
  const std::string long_reason(257, 'r');
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/v1/mute", "not json"},
      {"/v1/mute", "[1,2]"},
      {"/v1/mute", R"({"ch":"chat:x","for_ms":1000})"},
      {"/v1/mute", R"({"user":"","for_ms":1000})"},
      {"/v1/mute", R"({"user":")" + long_user + R"(","for_ms":1000})"},
      {"/v1/mute", R"({"user":"u\u0001","for_ms":1000})"},
      {"/v1/mute", R"({"user":7,"for_ms":1000})"},
      {"/v1/mute", R"({"user":"u","ch":"bad channel","for_ms":1000})"},
      {"/v1/mute", R"({"user":"u","ch":7,"for_ms":1000})"},
      {"/v1/mute", R"({"user":"u"})"},
      {"/v1/mute", R"({"user":"u","for_ms":-1})"},
      {"/v1/mute", R"({"user":"u","for_ms":31536000001})"},
      {"/v1/mute", R"({"user":"u","for_ms":"1000"})"},
      {"/v1/mute", R"({"user":"u","for_ms":1.5})"},
      {"/v1/ban", R"({"user":"u","for_ms":1000})"},
      {"/v1/ban", R"({"user":"u","ch":"chat:x","for_ms":1000,"reason":")" + long_reason + R"("})"},
      {"/v1/ban", R"({"user":"u","ch":"chat:x","for_ms":1000,"reason":5})"},
      {"/v1/kick", R"({"user":"u"})"},
      {"/v1/kick", R"({"ch":"chat:x"})"},
  };
  for (const auto& [path, body] : bad) {
    auto r = api(port(), "POST", path, body);
    EXPECT_EQ(r.status, 400) << path << " " << body << " -> " << r.body;
    EXPECT_EQ(json_str(r.body, "code"), "bad_request") << path << " " << body << " -> " << r.body;
  }
  auto r = http_request(port(), "POST", "/v1/mute", R"({"user":"u","for_ms":1000})");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(json_str(r.body, "code"), "unauthorized");
  r = http_request(port(), "POST", "/v1/kick", R"({"user":"u","ch":"chat:x"})", "wrong-key");
  EXPECT_EQ(r.status, 401);
  r = api(port(), "GET", "/v1/mute");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(json_str(r.body, "code"), "bad_request");
  r = api(port(), "POST", "/v1/moderation", "{}");
  EXPECT_EQ(r.status, 405);
  // Nothing was set by any of them.
  r = api(port(), "GET", "/v1/moderation?user=u");
  EXPECT_EQ(r.body, R"({"mutes":[],"bans":[]})");
  // Unknown fields are ignored: a good body with one is taken.
  r = api(port(), "POST", "/v1/mute", R"({"user":"u","for_ms":0,"note":"x"})");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(Sanctions, TheAdminPathsMuteBanKickAndListWithTheAdminKey) {
  auto hank = connect_as("m-hank");
  ASSERT_EQ(op_of(hank->join("chat:adm")), "joined");
  auto admin = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    return http_request(port(), method, path, body, kAdminKey);
  };
  auto r = admin("POST", "/admin/api/moderation",
                 R"({"tenant":"demo","action":"mute","user":"m-hank","ch":"chat:adm","for_ms":60000})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(refused(pub(*hank, "chat:adm", "h1", 2), "muted"));
  r = admin("GET", "/admin/api/moderation?tenant=demo");
  EXPECT_TRUE(has(r.body, R"({"tenant":"demo","user":"m-hank","ch":"chat:adm","until":)")) << r.body;
  r = admin("POST", "/admin/api/moderation",
            R"({"tenant":"demo","action":"kick","user":"m-hank","ch":"chat:adm","reason":"by an operator"})");
  EXPECT_EQ(r.body, R"({"kicked":1})");
  EXPECT_EQ(hank->expect("kicked"), R"({"op":"kicked","ch":"chat:adm","reason":"by an operator"})");
  // Refused: another tenant's key, no key, an unknown tenant or action.
  EXPECT_EQ(http_request(port(), "GET", "/admin/api/moderation", "", kDemoApiKey).status, 401);
  EXPECT_EQ(http_request(port(), "POST", "/admin/api/moderation", "{}").status, 401);
  r = admin("POST", "/admin/api/moderation", R"({"tenant":"nope","action":"kick","user":"u","ch":"chat:x"})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(json_str(r.body, "code"), "not_found");
  r = admin("POST", "/admin/api/moderation", R"({"tenant":"demo","action":"smite","user":"u","ch":"chat:x"})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = admin("POST", "/admin/api/moderation", std::string(5000, ' '));
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(admin("DELETE", "/admin/api/moderation").status, 405);
}

// A tenant whose cap is 3 mutes and bans in force (max_sanctions).
class SanctionCap : public SharedServerTest<SanctionCap> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml("max_sanctions = 3\n"),
                             std::string("admin_key = \"") + kAdminKey + "\"");
  }

 protected:
  static uint16_t port() { return server_->http_port(); }
};

TEST_F(SanctionCap, ANewMuteOrBanPastTheCapIsQuotaExceededChangesNothingAndLiftsFreeAPlace) {
  auto full = [](const HttpResult& r) {
    return r.status == 429 && json_str(r.body, "code") == "quota_exceeded" &&
           json_str(r.body, "msg") == "too many sanctions in force (max_sanctions 3)";
  };
  ASSERT_EQ(api(port(), "POST", "/v1/mute", R"({"user":"c-u1","for_ms":60000})").status, 200);
  ASSERT_EQ(api(port(), "POST", "/v1/mute", R"({"user":"c-u2","ch":"chat:cap","for_ms":60000})").status, 200);
  ASSERT_EQ(api(port(), "POST", "/v1/ban", R"({"user":"c-u3","ch":"chat:cap","for_ms":60000})").status, 200);
  // Full: a fourth, by either path or the admin page, is refused; the banned-to-be
  // user is neither kicked nor kept out, nor muted.
  auto dora = connect_as("c-u4");
  ASSERT_EQ(op_of(dora->join("chat:cap")), "joined");
  auto r = api(port(), "POST", "/v1/ban", R"({"user":"c-u4","ch":"chat:cap","for_ms":60000})");
  EXPECT_TRUE(full(r)) << r.status << " " << r.body;
  r = api(port(), "POST", "/v1/mute", R"({"user":"c-u4","for_ms":60000})");
  EXPECT_TRUE(full(r)) << r.status << " " << r.body;
  r = http_request(port(), "POST", "/admin/api/moderation",
                   R"({"tenant":"demo","action":"mute","user":"c-u4","for_ms":60000})", kAdminKey);
  EXPECT_TRUE(full(r)) << r.status << " " << r.body;
  EXPECT_EQ(api(port(), "GET", "/v1/moderation?user=c-u4").body, R"({"mutes":[],"bans":[]})");
  EXPECT_EQ(op_of(pub(*dora, "chat:cap", "d1", 2)), "ack");
  // Kicks are not sanctions in force: always taken.
  EXPECT_EQ(api(port(), "POST", "/v1/kick", R"({"user":"c-u4","ch":"chat:cap"})").body, R"({"kicked":1})");
  // One in force set again (a new end time) is taken while full.
  EXPECT_EQ(api(port(), "POST", "/v1/mute", R"({"user":"c-u1","for_ms":300})").status, 200);
  // A lift frees a place at once; the fourth now goes in.
  ASSERT_EQ(api(port(), "POST", "/v1/mute", R"({"user":"c-u2","ch":"chat:cap","for_ms":0})").status, 200);
  r = api(port(), "POST", "/v1/mute", R"({"user":"c-u4","for_ms":60000})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(full(api(port(), "POST", "/v1/mute", R"({"user":"c-u5","for_ms":60000})")));
  // One that ends by itself (c-u1's 300 ms) frees its place at its time.
  std::this_thread::sleep_for(400ms);
  r = api(port(), "POST", "/v1/mute", R"({"user":"c-u5","for_ms":60000})");
  EXPECT_EQ(r.status, 200) << r.body;
}

// ---- two nodes on one redis-server ----

ServerSpec node_spec(const std::string& redis) {
  ServerSpec spec = spec_with_tenants(default_tenants_toml("publish_per_sec = 0\npublish_per_conn_sec = 0\n"));
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_toml({redis});
  return spec;
}

// Two nodes, A and B, on one redis-server emptied first.
class SanctionNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis.ok()) << redis.why();
    ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
    a.start();
    b.start();
  }

  RedisServer& redis = shared_redis();
  ServerProcess a{node_spec(redis.address())};
  ServerProcess b{node_spec(redis.address())};
};

TEST_F(SanctionNodes, MuteKickAndBanToldToOneNodeAreEnforcedOnTheOther) {
  auto alice = connect_as(b.http_port(), "alice");  // on B
  auto bob = connect_as(a.http_port(), "bob");      // on A
  ASSERT_EQ(op_of(alice->join("chat:x")), "joined");
  ASSERT_EQ(op_of(bob->join("chat:x")), "joined");
  int rid = 10;
  auto alice_pub = [&] {
    ++rid;
    return pub(*alice, "chat:x", "a" + std::to_string(rid), rid);
  };

  // Mute, told to A: alice's pubs on B are refused, bob's on A are not.
  auto r = api(a.http_port(), "POST", "/v1/mute", R"({"user":"alice","ch":"chat:x","for_ms":60000})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::string ans = until_answer(alice_pub, [](const std::string& s) { return refused(s, "muted"); });
  EXPECT_TRUE(refused(ans, "muted")) << ans;
  EXPECT_EQ(op_of(pub(*bob, "chat:x", "b1", ++rid)), "ack");
  // B lists it too.
  r = api(b.http_port(), "GET", "/v1/moderation?user=alice");
  EXPECT_TRUE(has(r.body, R"("mutes":[{"user":"alice","ch":"chat:x","until":)")) << r.body;
  EXPECT_EQ(metric_value(b.http_port(), "parley_mutes_active{tenant=\"demo\"}"), 1);
  // Lifted on A: B lets her publish again.
  r = api(a.http_port(), "POST", "/v1/mute", R"({"user":"alice","ch":"chat:x","for_ms":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  ans = until_answer(alice_pub, [](const std::string& s) { return op_of(s) == "ack"; });
  EXPECT_EQ(op_of(ans), "ack") << ans;

  // Kick, told to A: alice's connection on B gets the frame, bob on A her leave.
  r = api(a.http_port(), "POST", "/v1/kick", R"({"user":"alice","ch":"chat:x","reason":"calm down"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"kicked":0})");  // none of hers on A
  EXPECT_EQ(alice->expect("kicked"), R"({"op":"kicked","ch":"chat:x","reason":"calm down"})");
  std::string p;
  for (int i = 0; i < 5 && !has(p, "leave"); ++i) p = bob->expect("presence");
  EXPECT_EQ(json_raw(p, "leave"), R"(["alice"])") << p;
  EXPECT_EQ(metric_value(b.http_port(), "parley_kicks_total"), 1);

  // Ban, told to B this time, for 4 s: A refuses her joins, then lets her in.
  auto alice_a = connect_as(a.http_port(), "alice");
  auto try_join = [&rid](Client& c) {
    return [&rid, &c] {
      const std::string j = join_answer(c, "chat:x", ++rid);
      if (op_of(j) == "joined") c.send(R"({"op":"leave","ch":"chat:x"})");
      return j;
    };
  };
  auto is_banned = [](const std::string& s) { return refused(s, "banned from this channel"); };
  r = api(b.http_port(), "POST", "/v1/ban", R"({"user":"alice","ch":"chat:x","for_ms":4000})");
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t until = json_int(r.body, "until").value_or(0);
  ans = until_answer(try_join(*alice_a), is_banned);
  EXPECT_TRUE(is_banned(ans)) << ans;
  // A node started now reads it from the store.
  ServerProcess c(node_spec(redis.address()));
  c.start();
  auto alice_c = connect_as(c.http_port(), "alice");
  ans = until_answer(try_join(*alice_c), is_banned);
  EXPECT_TRUE(is_banned(ans)) << ans;
  EXPECT_LT(wall_ms(), until) << "the ban ended before node C was checked: the test proves nothing";
  // Its end, on every node.
  while (wall_ms() <= until + 20) std::this_thread::sleep_for(20ms);
  for (Client* cl : {alice_a.get(), alice.get(), alice_c.get()}) {
    EXPECT_EQ(op_of(join_answer(*cl, "chat:x", ++rid)), "joined");
  }
  EXPECT_GE(metric_value(a.http_port(), "parley_bans_enforced_total"), 1);
}

TEST_F(SanctionNodes, ATenantWideMuteSetOnOneNodeExpiresOnTheOther) {
  auto ivan = connect_as(b.http_port(), "ivan");
  ASSERT_EQ(op_of(ivan->join("chat:e1")), "joined");
  auto r = api(a.http_port(), "POST", "/v1/mute", R"({"user":"ivan","for_ms":1500})");
  ASSERT_EQ(r.status, 200) << r.body;
  const int64_t until = json_int(r.body, "until").value_or(0);
  int rid = 1;
  const std::string ans = until_answer(
      [&] {
        ++rid;
        return pub(*ivan, "chat:e1", "i" + std::to_string(rid), rid);
      },
      [](const std::string& s) { return refused(s, "muted"); });
  ASSERT_TRUE(refused(ans, "muted")) << ans;
  while (wall_ms() <= until + 20) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(op_of(pub(*ivan, "chat:e1", "late", ++rid)), "ack");
  // Both nodes list nothing once it ended.
  for (auto* n : {&a, &b}) {
    EXPECT_EQ(api(n->http_port(), "GET", "/v1/moderation").body, R"({"mutes":[],"bans":[]})");
  }
}

}  // namespace
}  // namespace parley::testing
