// Tenant rules of PROTOCOL.md: channels of different tenants never see each
// other, even with the same name; a tenant's allowed_origins checks hello.
#include <gtest/gtest.h>

#include <string>

#include "auth/jwt.h"
#include "common/clock.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

class TenantIsolationTest : public SharedServerTest<TenantIsolationTest> {
 protected:
  static void pub(Client& c, const std::string& ch, const std::string& id) {
    c.send(R"({"op":"pub","ch":")" + ch + R"(","id":")" + id + R"(","body":")" + id +
           R"(","rid":")" + id + R"("})");
  }
};

TEST_F(TenantIsolationTest, MessagesStayInTheirTenant) {
  auto d = connect_as("alice", "demo");
  auto o = connect_as("alice", "other");
  d->join("chat:same");
  o->join("chat:same");
  pub(*d, "chat:same", "from-demo");
  pub(*o, "chat:same", "from-other");
  // Each sees only its own tenant's message: the first msg is its own and the
  // one after is never the other's (checked with a second publish each).
  EXPECT_EQ(json_str(d->expect("msg"), "id"), "from-demo");
  EXPECT_EQ(json_str(o->expect("msg"), "id"), "from-other");
  pub(*d, "chat:same", "demo-2");
  pub(*o, "chat:same", "other-2");
  EXPECT_EQ(json_str(d->expect("msg"), "id"), "demo-2");
  EXPECT_EQ(json_str(o->expect("msg"), "id"), "other-2");
}

TEST_F(TenantIsolationTest, SeqCountersAreIndependent) {
  auto d = connect_as("alice", "demo");
  auto o = connect_as("bob", "other");
  d->join("chat:seq");
  o->join("chat:seq");
  for (const char* id : {"d1", "d2", "d3"}) pub(*d, "chat:seq", id);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(d->expect("ack").empty());
  pub(*o, "chat:seq", "o1");
  auto ack = o->expect("ack");
  EXPECT_EQ(json_int(ack, "seq"), 1) << ack;
  auto j = connect_as("carol", "other")->join("chat:seq");
  EXPECT_EQ(json_int(j, "seq"), 1) << j;
}

TEST_F(TenantIsolationTest, DedupeIsPerTenant) {
  auto d = connect_as("alice", "demo");
  auto o = connect_as("alice", "other");
  d->join("chat:dedupe");
  o->join("chat:dedupe");
  pub(*d, "chat:dedupe", "same-id");
  ASSERT_EQ(json_bool(d->expect("ack"), "dup"), false);
  pub(*o, "chat:dedupe", "same-id");
  auto ack = o->expect("ack");
  EXPECT_EQ(json_bool(ack, "dup"), false) << ack;
  EXPECT_EQ(json_int(ack, "seq"), 1) << ack;
}

TEST_F(TenantIsolationTest, HistoryIsPerTenant) {
  auto d = connect_as("alice", "demo");
  d->join("chat:hist");
  pub(*d, "chat:hist", "d1");
  pub(*d, "chat:hist", "d2");
  for (int i = 0; i < 2; ++i) ASSERT_FALSE(d->expect("ack").empty());
  auto o = connect_as("alice", "other");
  o->send(R"({"op":"history","ch":"chat:hist","after":0,"rid":1})");
  EXPECT_EQ(o->expect("history"), R"({"op":"history","rid":1,"ch":"chat:hist","msgs":[]})");
  auto r = http_request(server_->http_port(), "GET", "/v1/history?ch=chat:hist&after=0", "",
                        kOtherApiKey);
  EXPECT_EQ(r.body, R"({"msgs":[]})");
}

TEST_F(TenantIsolationTest, PresenceIsPerTenant) {
  auto d = connect_as("dora", "demo");
  d->join("world:pres");
  auto o = connect_as("oscar", "other");
  auto j = o->join("world:pres");
  EXPECT_EQ(json_raw(j, "members"), R"(["oscar"])") << j;
  auto r = http_request(server_->http_port(), "GET", "/v1/presence?ch=world:pres", "",
                        kOtherApiKey);
  EXPECT_EQ(r.body, R"({"members":["oscar"]})");
  r = http_request(server_->http_port(), "GET", "/v1/presence?ch=world:pres", "", kDemoApiKey);
  EXPECT_EQ(r.body, R"({"members":["dora"]})");
}

TEST_F(TenantIsolationTest, PresenceEventsStayInTheirTenant) {
  auto d = connect_as("dora", "demo");
  d->join("world:pres-events");
  auto o = connect_as("oscar", "other");
  o->join("world:pres-events");
  auto d2 = connect_as("dave", "demo");
  d2->join("world:pres-events");
  EXPECT_EQ(d->expect("presence"),
            R"({"op":"presence","ch":"world:pres-events","join":["dave"]})")
      << "oscar of tenant other is not announced";
}

TEST_F(TenantIsolationTest, HttpPublishGoesOnlyToTheKeysTenant) {
  auto d = connect_as("alice", "demo");
  auto o = connect_as("alice", "other");
  d->join("chat:http");
  o->join("chat:http");
  auto r = http_request(server_->http_port(), "POST", "/v1/publish",
                        R"({"ch":"chat:http","id":"x","body":"for other"})", kOtherApiKey);
  ASSERT_EQ(r.body, R"({"seq":1,"dup":false})");
  EXPECT_EQ(json_raw(o->expect("msg"), "body"), R"("for other")");
  pub(*d, "chat:http", "own");
  auto m = d->expect("msg");
  EXPECT_EQ(json_str(m, "id"), "own") << m;
  EXPECT_EQ(json_int(m, "seq"), 1) << m;
}

TEST_F(TenantIsolationTest, HttpSendGoesOnlyToTheKeysTenant) {
  auto d = connect_as("sam", "demo");
  auto o = connect_as("sam", "other");
  auto r = http_request(server_->http_port(), "POST", "/v1/send",
                        R"({"user":"sam","body":"for other"})", kOtherApiKey);
  EXPECT_EQ(r.body, R"({"delivered":1})");
  EXPECT_EQ(json_raw(o->expect("direct"), "body"), R"("for other")");
  r = http_request(server_->http_port(), "POST", "/v1/send", R"({"user":"sam","body":"for demo"})",
                   kDemoApiKey);
  EXPECT_EQ(r.body, R"({"delivered":1})");
  EXPECT_EQ(json_raw(d->expect("direct"), "body"), R"("for demo")")
      << "demo's sam got nothing before its own direct";
}

// ---- allowed_origins ----

constexpr const char* kWebSecret = "test-secret-web-0123456789abcdef";

class AllowedOriginsTest : public SharedServerTest<AllowedOriginsTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml() + "\n[tenants.web]\nsecret = \"" + kWebSecret +
                             "\"\napi_key = \"key-web\"\n"
                             "allowed_origins = [\"https://game.example\"]\n");
  }

 protected:
  static std::string web_token() {
    auth::Claims c;
    c.sub = "w1";
    c.tenant = "web";
    c.exp = wall_ms() / 1000 + 3600;
    return auth::mint_hs256(c, kWebSecret);
  }
};

TEST_F(AllowedOriginsTest, HelloFromAnAllowedOriginIsWelcome) {
  auto c = Client::connect(server_->http_port(), Wire::kWebSocket, "https://game.example");
  auto w = c->hello(web_token());
  EXPECT_EQ(op_of(w), "welcome") << w;
  EXPECT_EQ(json_str(w, "tenant"), "web");
}

TEST_F(AllowedOriginsTest, HelloFromAnotherOriginIsUnauthorizedAndCloses4001) {
  auto c = Client::connect(server_->http_port(), Wire::kWebSocket, "https://evil.example");
  auto e = c->hello(web_token(), 3);
  EXPECT_EQ(op_of(e), "error") << e;
  EXPECT_EQ(json_str(e, "code"), "unauthorized") << e;
  EXPECT_EQ(json_int(e, "rid"), 3) << e;
  EXPECT_EQ(c->wait_closed(), 4001);
}

TEST_F(AllowedOriginsTest, OriginMustMatchExactly) {
  for (const char* origin : {"https://game.example.evil", "http://game.example",
                             "https://game.example:8443", "https://GAME.example"}) {
    auto c = Client::connect(server_->http_port(), Wire::kWebSocket, origin);
    auto e = c->hello(web_token());
    EXPECT_EQ(json_str(e, "code"), "unauthorized") << origin << ": " << e;
    EXPECT_EQ(c->wait_closed(), 4001) << origin;
  }
}

TEST_F(AllowedOriginsTest, ATenantWithoutAListAcceptsAnyOrigin) {
  for (const char* origin : {"https://evil.example", "https://game.example"}) {
    auto c = Client::connect(server_->http_port(), Wire::kWebSocket, origin);
    auto w = c->hello(ServerProcess::token("u1", "demo"));
    EXPECT_EQ(op_of(w), "welcome") << origin << ": " << w;
  }
}

}  // namespace
}  // namespace parley::testing
