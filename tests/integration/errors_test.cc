// Protocol errors of PROTOCOL.md ("Connecting", "Errors"): bad_request,
// unauthorized, forbidden and too_large, each with its effect on the connection.
#include <gtest/gtest.h>

#include <string>

#include "auth/jwt.h"
#include "common/clock.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr const char* kSmallSecret = "test-secret-small-0123456789abcdef";

class ErrorsTest : public SharedServerTest<ErrorsTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml() +
                             "\n[tenants.small]\nsecret = \"" + kSmallSecret +
                             "\"\napi_key = \"key-small\"\nmax_message_bytes = 1024\n");
  }

 protected:
  static std::unique_ptr<Client> connect() { return Client::connect(server_->http_port()); }

  // "small" has its own secret; demo and other use ServerProcess::token.
  static std::unique_ptr<Client> connect_as(const std::string& user,
                                            const std::string& tenant = "demo") {
    if (tenant != "small") return SharedServerTest::connect_as(user, tenant);
    return connect_with_token(server_->http_port(), token_signed_with(kSmallSecret, "small", user));
  }

  static std::unique_ptr<Client> connect_with_chans(const std::string& user,
                                                    std::vector<std::string> chans) {
    return connect_with_token(server_->http_port(),
                              ServerProcess::token(user, "demo", std::move(chans), true));
  }

  // The next object, which must be an error with this code; returns it.
  static std::string expect_error(Client& c, const std::string& code) {
    auto e = c.next();
    if (!e) {
      ADD_FAILURE() << "no error frame";
      return "";
    }
    EXPECT_EQ(op_of(*e), "error") << *e;
    EXPECT_EQ(json_str(*e, "code"), code) << *e;
    EXPECT_TRUE(json_str(*e, "msg").has_value()) << *e;
    return *e;
  }

  // The connection still answers.
  static void expect_open(Client& c) {
    c.send(R"({"op":"ping","rid":"alive"})");
    auto p = c.next();
    ASSERT_TRUE(p.has_value()) << "connection closed";
    EXPECT_EQ(op_of(*p), "pong") << *p;
    EXPECT_EQ(json_str(*p, "rid"), "alive") << *p;
  }

  static std::string token_signed_with(const std::string& secret, const std::string& tenant,
                                       const std::string& user = "mallory") {
    auth::Claims c;
    c.sub = user;
    c.tenant = tenant;
    c.exp = wall_ms() / 1000 + 3600;
    return auth::mint_hs256(c, secret);
  }

  // Sends a hello that must be refused with unauthorized and close 4001.
  static void expect_refused(const std::string& token) {
    auto c = connect();
    c->send(hello_frame(token));
    auto e = expect_error(*c, "unauthorized");
    EXPECT_EQ(json_int(e, "rid"), 1) << e;
    EXPECT_EQ(c->wait_closed(), 4001);
  }
};

// ---- bad_request: stays open ----

TEST_F(ErrorsTest, NotJsonIsBadRequest) {
  auto c = connect_as("u1");
  c->send("{this is not json");
  auto e = expect_error(*c, "bad_request");
  EXPECT_FALSE(json_raw(e, "rid").has_value()) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, NotAnObjectIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"([{"op":"ping","rid":1}])");
  expect_error(*c, "bad_request");
  expect_open(*c);
}

TEST_F(ErrorsTest, UnknownOpIsBadRequestWithRid) {
  auto c = connect_as("u1");
  c->send(R"({"op":"dance","rid":3})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 3) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, MissingOpIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"ch":"chat:x","rid":3})");
  expect_error(*c, "bad_request");
  expect_open(*c);
}

TEST_F(ErrorsTest, MissingFieldIsBadRequestWithRid) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","rid":4})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 4) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, PubWithoutIdIsBadRequest) {
  auto c = connect_as("u1");
  c->join("chat:no-id");
  c->send(R"({"op":"pub","ch":"chat:no-id","body":1,"rid":"p"})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_str(e, "rid"), "p") << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, IllTypedFieldIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","ch":5,"rid":5})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 5) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, NegativeSinceIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","ch":"chat:x","since":-1,"rid":5})");
  expect_error(*c, "bad_request");
  expect_open(*c);
}

TEST_F(ErrorsTest, HistoryWithBothAfterAndBeforeIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"history","ch":"chat:x","after":1,"before":5,"rid":6})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 6) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, HistoryWithNeitherAfterNorBeforeIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"history","ch":"chat:x","rid":6})");
  expect_error(*c, "bad_request");
  expect_open(*c);
}

TEST_F(ErrorsTest, IllTypedHistoryLimitIsBadRequest) {
  auto c = connect_as("u1");
  for (const char* limit : {"0", "-1", "\"5\"", "1.5"}) {
    c->send(std::string(R"({"op":"history","ch":"chat:x","after":0,"rid":6,"limit":)") + limit +
            "}");
    expect_error(*c, "bad_request");
  }
  expect_open(*c);
}

TEST_F(ErrorsTest, IllTypedRidIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"ping","rid":{"a":1}})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_FALSE(json_raw(e, "rid").has_value()) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, BadChannelNameIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","ch":"chat lobby!","rid":7})");
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 7) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, ChannelNameOver128CharsIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","ch":")" + std::string(129, 'a') + R"(","rid":8})");
  expect_error(*c, "bad_request");
  expect_open(*c);
  auto j = c->join(std::string(128, 'a'));
  EXPECT_EQ(op_of(j), "joined") << "128 chars are allowed";
}

TEST_F(ErrorsTest, EmptyChannelNameIsBadRequest) {
  auto c = connect_as("u1");
  c->send(R"({"op":"join","ch":"","rid":8})");
  expect_error(*c, "bad_request");
  expect_open(*c);
}

TEST_F(ErrorsTest, SecondHelloIsBadRequest) {
  auto c = connect_as("u1");
  c->send(hello_frame(ServerProcess::token("u1"), 2));
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 2) << e;
  expect_open(*c);
}

// ---- version ----

TEST_F(ErrorsTest, UnsupportedVersionIsBadRequestAndCloses4002) {
  auto c = connect();
  c->send(hello_frame(ServerProcess::token("u1"), /*rid=*/1, /*v=*/2));
  auto e = expect_error(*c, "bad_request");
  EXPECT_EQ(json_int(e, "rid"), 1) << e;
  EXPECT_EQ(c->wait_closed(), 4002);
}

TEST_F(ErrorsTest, HelloWithoutAnIntegerVersionIsBadRequestAndCloses4002) {
  const std::string token = ServerProcess::token("u1");
  for (const std::string v : {"", R"("v":"1",)", R"("v":1.5,)"}) {
    auto c = connect();
    c->send(R"({"op":"hello",)" + v + R"("token":")" + token + R"(","rid":3})");
    auto e = expect_error(*c, "bad_request");
    EXPECT_EQ(json_int(e, "rid"), 3) << e;
    EXPECT_EQ(c->wait_closed(), 4002) << v;
  }
}

// ---- unauthorized: closes with 4001 ----

TEST_F(ErrorsTest, BadSignatureIsUnauthorized) {
  expect_refused(token_signed_with("not-the-demo-secret", "demo"));
}

TEST_F(ErrorsTest, TamperedTokenIsUnauthorized) {
  std::string t = ServerProcess::token("u1");
  t.back() = t.back() == 'A' ? 'B' : 'A';
  expect_refused(t);
}

TEST_F(ErrorsTest, TokenSignedWithAnotherTenantsSecretIsUnauthorized) {
  expect_refused(token_signed_with(kOtherSecret, "demo"));
}

TEST_F(ErrorsTest, TokenOfAnUnknownTenantIsUnauthorized) {
  expect_refused(token_signed_with(kDemoSecret, "nobody"));
}

TEST_F(ErrorsTest, GarbageTokenIsUnauthorized) { expect_refused("not.a.jwt"); }

TEST_F(ErrorsTest, TokenWithAUserIdOver64CharsIsUnauthorized) {
  expect_refused(token_signed_with(kDemoSecret, "demo", std::string(65, 'u')));
}

TEST_F(ErrorsTest, TokenWithAUserIdOf64CharsIsAccepted) {
  auto c = connect();
  auto w = c->hello(token_signed_with(kDemoSecret, "demo", std::string(64, 'u')));
  EXPECT_EQ(json_str(w, "user"), std::string(64, 'u')) << w;
}

TEST_F(ErrorsTest, TokenExpiredBeyondTheLeewayIsUnauthorized) {
  expect_refused(ServerProcess::token("u1", "demo", {}, false, -120));
}

TEST_F(ErrorsTest, TokenExpiredWithinTheLeewayIsAccepted) {
  auto c = connect();
  auto w = c->hello(ServerProcess::token("u1", "demo", {}, false, -30));
  EXPECT_EQ(op_of(w), "welcome") << w;
}

TEST_F(ErrorsTest, OpBeforeHelloIsUnauthorizedAndCloses4001) {
  auto c = connect();
  c->send(R"({"op":"join","ch":"chat:x","rid":3})");
  auto e = expect_error(*c, "unauthorized");
  EXPECT_EQ(json_int(e, "rid"), 3) << e;
  EXPECT_EQ(c->wait_closed(), 4001);
}

TEST_F(ErrorsTest, PingBeforeHelloIsUnauthorized) {
  auto c = connect();
  c->send(R"({"op":"ping","rid":3})");
  expect_error(*c, "unauthorized");
  EXPECT_EQ(c->wait_closed(), 4001);
}

TEST(HelloTimeoutTest, NoHelloWithinTheDeadlineIsUnauthorizedAndCloses4001) {
  ServerSpec spec;
  spec.server_extra = "hello_timeout_ms = 200";
  ServerProcess server(spec);
  server.start();
  auto c = Client::connect(server.http_port());
  auto e = c->next();
  ASSERT_TRUE(e.has_value()) << "no frame before the close";
  EXPECT_EQ(op_of(*e), "error") << *e;
  EXPECT_EQ(json_str(*e, "code"), "unauthorized") << *e;
  EXPECT_EQ(c->wait_closed(), 4001);
}

TEST(HelloTimeoutTest, HelloInTimeKeepsTheConnectionPastTheDeadline) {
  ServerSpec spec;
  spec.server_extra = "hello_timeout_ms = 200";
  ServerProcess server(spec);
  server.start();
  auto c = Client::connect(server.http_port());
  ASSERT_EQ(op_of(c->hello(ServerProcess::token("u1"))), "welcome");
  // Past the deadline and at least one sweep (every 500 ms): still open.
  EXPECT_FALSE(c->wait_closed(1200ms).has_value());
  c->send(R"({"op":"ping","rid":1})");
  EXPECT_EQ(json_int(c->expect("pong"), "rid"), 1);
}

// ---- forbidden: stays open ----

TEST_F(ErrorsTest, JoinOfAChannelTheTokenDoesNotAllowIsForbidden) {
  auto c = connect_with_chans("u1", {"chat:allowed"});
  c->send(R"({"op":"join","ch":"chat:other","rid":1})");
  auto e = expect_error(*c, "forbidden");
  EXPECT_EQ(json_int(e, "rid"), 1) << e;
  expect_open(*c);
  EXPECT_EQ(op_of(c->join("chat:allowed")), "joined");
}

TEST_F(ErrorsTest, StarAtTheEndOfAPatternMatchesAnySuffix) {
  auto c = connect_with_chans("u1", {"room:*"});
  EXPECT_EQ(op_of(c->join("room:7")), "joined");
  EXPECT_EQ(op_of(c->join("room:lobby:east")), "joined");
  c->send(R"({"op":"join","ch":"rooms","rid":2})");
  expect_error(*c, "forbidden");
  c->send(R"({"op":"join","ch":"lobby:room:7","rid":3})");
  expect_error(*c, "forbidden");
  expect_open(*c);
}

TEST_F(ErrorsTest, HistoryOfAChannelTheTokenDoesNotAllowIsForbidden) {
  auto c = connect_with_chans("u1", {"chat:allowed"});
  c->send(R"({"op":"history","ch":"chat:secret","after":0,"rid":4})");
  auto e = expect_error(*c, "forbidden");
  EXPECT_EQ(json_int(e, "rid"), 4) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, PubWithoutJoinIsForbidden) {
  auto c = connect_as("u1");
  c->send(R"({"op":"pub","ch":"chat:not-joined","id":"m1","body":1,"rid":5})");
  auto e = expect_error(*c, "forbidden");
  EXPECT_EQ(json_int(e, "rid"), 5) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, StateWithoutJoinIsForbidden) {
  auto c = connect_as("u1");
  c->send(R"({"op":"state","ch":"world:not-joined","key":"pos","body":1,"rid":6})");
  auto e = expect_error(*c, "forbidden");
  EXPECT_EQ(json_int(e, "rid"), 6) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, UpWithoutJoinIsForbidden) {
  auto c = connect_as("u1");
  c->send(R"({"op":"up","ch":"world:not-joined","body":1,"rid":7})");
  expect_error(*c, "forbidden");
  expect_open(*c);
}

// ---- too_large (tenant "small": max_message_bytes = 1024) ----

std::string pub_with_body_of(size_t bytes, const std::string& rid) {
  // A JSON string body: two quotes plus the characters.
  return R"({"op":"pub","ch":"chat:big","id":"m1","rid":)" + rid + R"(,"body":")" +
         std::string(bytes - 2, 'x') + "\"}";
}

TEST_F(ErrorsTest, BodyOverTheLimitIsTooLargeWithRidAndStaysOpen) {
  auto c = connect_as("u1", "small");
  c->join("chat:big");
  c->send(pub_with_body_of(2000, "\"big\""));
  auto e = expect_error(*c, "too_large");
  EXPECT_EQ(json_str(e, "rid"), "big") << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, FrameWithinTheLimitIsAccepted) {
  auto c = connect_as("u1", "small");
  c->join("chat:big-ok");
  std::string frame = R"({"op":"pub","ch":"chat:big-ok","id":"m1","rid":1,"body":")";
  frame += std::string(1024 - frame.size() - 2, 'x') + "\"}";
  ASSERT_EQ(frame.size(), 1024u);
  c->send(frame);
  auto ack = c->expect("ack");
  EXPECT_EQ(json_int(ack, "seq"), 1) << ack;
}

TEST_F(ErrorsTest, FrameOverTheLimitIsTooLargeWithRid) {
  auto c = connect_as("u1", "small");
  // Small body, big frame: an unknown field pads it past 1024 bytes.
  c->send(R"({"op":"ping","rid":9,"pad":")" + std::string(2000, 'p') + "\"}");
  auto e = expect_error(*c, "too_large");
  EXPECT_EQ(json_int(e, "rid"), 9) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, FrameUpToFourTimesTheLimitIsStillParsed) {
  auto c = connect_as("u1", "small");
  c->send(R"({"op":"ping","rid":10,"pad":")" + std::string(4000, 'p') + "\"}");
  auto e = expect_error(*c, "too_large");
  EXPECT_EQ(json_int(e, "rid"), 10) << e;
  expect_open(*c);
}

TEST_F(ErrorsTest, FrameOverFourTimesTheLimitCloses1009) {
  auto c = connect_as("u1", "small");
  c->send(R"({"op":"ping","rid":11,"pad":")" + std::string(5000, 'p') + "\"}");
  EXPECT_EQ(c->wait_closed(), 1009);
}

}  // namespace
}  // namespace parley::testing
