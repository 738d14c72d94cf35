// Who a client may claim to be (issue 11, findings 10 and 11): the HTTP API's
// user id `server` is reserved, and user ids and message ids follow
// PROTOCOL.md's character rules, so no two different (user, id) pairs can
// look alike and no control character reaches the store.
#include <gtest/gtest.h>

#include "auth/jwt.h"
#include "common/clock.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

std::string token_for(const std::string& sub) {
  auth::Claims c;
  c.sub = sub;
  c.tenant = "demo";
  c.exp = wall_ms() / 1000 + 3600;
  return auth::mint_hs256(c, kDemoSecret);
}

class IdentityTest : public SharedServerTest<IdentityTest> {
 protected:
  // A hello with `token` over `wire` must get unauthorized (with its rid) and
  // a close: 4001 on WebSocket, the socket shut on raw TCP.
  static void expect_refused(const std::string& token, Wire wire = Wire::kWebSocket) {
    auto c = Client::connect(server_->port(wire), wire);
    c->send(hello_frame(token, 9));
    auto e = c->next();
    ASSERT_TRUE(e.has_value()) << "no answer to the hello";
    EXPECT_EQ(op_of(*e), "error") << *e;
    EXPECT_EQ(json_str(*e, "code"), "unauthorized") << *e;
    EXPECT_EQ(json_int(*e, "rid"), 9) << *e;
    EXPECT_EQ(c->wait_closed(), wire == Wire::kWebSocket ? 4001 : 0);
  }
};

TEST_F(IdentityTest, TokenClaimingTheApiUserServerIsUnauthorized) {
  expect_refused(token_for("server"));
  expect_refused(token_for("server"), Wire::kTcp);
}

// PROTOCOL.md, event streams: on TCP and Unix (never WebSocket) a game server
// may say hello with its tenant's api_key and acts as user `server`.
TEST_F(IdentityTest, ApiKeyHelloOnTcpActsAsTheServerUser) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  c->send(R"({"op":"hello","v":1,"api_key":"key-demo","rid":3})");
  auto w = c->expect("welcome");
  EXPECT_EQ(json_str(w, "user"), "server") << w;
  EXPECT_EQ(json_str(w, "tenant"), "demo") << w;
  EXPECT_EQ(json_int(w, "rid"), 3) << w;
  c->join("chat:api-key-hello");
  c->send(pub_frame("chat:api-key-hello", "m1", "{}", 4));
  auto msg = c->expect("msg");
  EXPECT_EQ(json_str(msg, "from"), "server") << msg;
}

TEST_F(IdentityTest, ApiKeyHelloOnWebSocketIsUnauthorized) {
  auto c = Client::connect(server_->http_port(), Wire::kWebSocket);
  c->send(R"({"op":"hello","v":1,"api_key":"key-demo","rid":9})");
  auto e = c->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(json_str(*e, "code"), "unauthorized") << *e;
  EXPECT_EQ(json_int(*e, "rid"), 9) << *e;
  EXPECT_EQ(c->wait_closed(), 4001);
}

TEST_F(IdentityTest, UnknownApiKeyHelloIsUnauthorized) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  c->send(R"({"op":"hello","v":1,"api_key":"not-a-key","rid":9})");
  auto e = c->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(json_str(*e, "code"), "unauthorized") << *e;
  EXPECT_EQ(c->wait_closed(), 0);
}

TEST_F(IdentityTest, ApiPublishKeepsItsOwnDedupeSpace) {
  // Before: a player with sub "server" published id "gs-1" first, and the game
  // server's own POST with that id was answered dup:true and never stored.
  expect_refused(token_for("server"));
  auto r = http_request(server_->http_port(), "POST", "/v1/publish",
                        R"({"ch":"chat:api-dedupe","id":"gs-1","body":{"round":1}})", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_bool(r.body, "dup"), false) << r.body;
  auto stored = http_history_all(server_->http_port(), "chat:api-dedupe");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(json_str(stored[0], "from"), "server");
}

TEST_F(IdentityTest, SimilarButDifferentUserIdsAreAccepted) {
  for (const char* sub : {"Server", "server2", "servers", " server"}) {
    auto c = connect_with_token(server_->http_port(), token_for(sub));
    c->send(R"({"op":"ping","rid":1})");
    EXPECT_EQ(op_of(c->expect("pong")), "pong") << sub;
  }
}

TEST_F(IdentityTest, UserIdWithNulIsUnauthorizedAndTheServerStaysUp) {
  // A validly signed token whose sub holds U+0000 used to be accepted, and its
  // first pub aborted a Debug server in the store (a NUL in a key's user part).
  expect_refused(token_for(std::string("a\0b", 3)));
  expect_refused(token_for(std::string("a\0b", 3)), Wire::kTcp);
  auto c = connect_as("after-nul");
  c->join("chat:after-nul");
  c->send(R"({"op":"pub","ch":"chat:after-nul","id":"m1","body":1,"rid":1})");
  EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
}

TEST_F(IdentityTest, UserIdsWithOtherControlCharactersAreUnauthorized) {
  expect_refused(token_for("line\nbreak"));
  expect_refused(token_for("tab\there"));
  expect_refused(token_for("del\x7f"));
  expect_refused(token_for("c1\xC2\x85"));  // U+0085
}

TEST_F(IdentityTest, UserIdOfSixtyFourCharactersIsAcceptedAndSixtyFiveIsNot) {
  std::string e64;
  for (int i = 0; i < 64; ++i) e64 += "\xC3\xA9";
  auto c = connect_with_token(server_->http_port(), token_for(e64));  // EXPECTs a welcome
  expect_refused(token_for(e64 + "x"));
}

TEST_F(IdentityTest, MessageIdWithAControlCharacterIsBadRequestAndStaysOpen) {
  // Ids "b\0c" from user "a" and "c" from user "a\0b" used to share one
  // separator-joined dedupe key; with no control character in either, no two
  // different (user, id) pairs can look alike.
  auto c = connect_as("ctl-user");
  c->join("chat:ctl-id");
  c->send(R"({"op":"pub","ch":"chat:ctl-id","id":"b\u0000c","body":1,"rid":1})");
  auto e = c->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(json_str(*e, "code"), "bad_request") << *e;
  EXPECT_EQ(json_int(*e, "rid"), 1) << *e;
  c->send(R"({"op":"pub","ch":"chat:ctl-id","id":"b c","body":1,"rid":2})");
  auto ack = c->expect("ack");
  EXPECT_EQ(json_int(ack, "rid"), 2) << ack;
  EXPECT_EQ(json_int(ack, "seq"), 1) << ack;
}

}  // namespace
}  // namespace parley::testing
