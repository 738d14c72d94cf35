// The way back from the app server (PROTOCOL.md "HTTP API"): POST /v1/send to
// every connection of a user, or (Parley's addition, docs/protocol-notes.md)
// to one connection named by the `conn` of its welcome, arriving as `direct`;
// and POST /v1/publish into a world, arriving as `msg` from "server".
#include <gtest/gtest.h>

#include "support/server_process.h"

namespace parley::testing {
namespace {

class DirectTest : public SharedServerTest<DirectTest> {};

struct Conn {
  std::unique_ptr<Client> client;
  std::string conn;
};

Conn open(uint16_t port, const std::string& user, const std::string& tenant = "demo",
          Wire wire = Wire::kWebSocket) {
  auto c = Client::connect(port, wire);
  const std::string w = c->hello(ServerProcess::token(user, tenant));
  EXPECT_EQ(op_of(w), "welcome") << w;
  return {std::move(c), json_str(w, "conn").value_or("")};
}

HttpResult send(uint16_t port, const std::string& body, const std::string& key = kDemoApiKey) {
  return http_request(port, "POST", "/v1/send", body, key);
}

// Nothing more for `c`: a ping's pong is the next object.
void expect_nothing_more(Client& c) {
  c.send(R"({"op":"ping","rid":"quiet"})");
  const auto next = c.next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(op_of(*next), "pong") << *next;
}

TEST_F(DirectTest, ToAUserReachesEveryConnectionOfItOverAnyTransport) {
  auto a1 = open(server_->http_port(), "dm-u1");
  auto a2 = open(server_->tcp_port(), "dm-u1", "demo", Wire::kTcp);
  auto b = open(server_->http_port(), "dm-u2");
  const auto r = send(server_->http_port(), R"({"user":"dm-u1","body":{"gift":[1,2]}})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"delivered":2})");
  for (auto* c : {a1.client.get(), a2.client.get()}) {
    const auto d = c->expect("direct");
    EXPECT_EQ(d, R"({"op":"direct","from":"server","body":{"gift":[1,2]}})");
  }
  expect_nothing_more(*b.client);
}

TEST_F(DirectTest, ToAConnectionReachesOnlyThatConnection) {
  auto a1 = open(server_->http_port(), "dm-c1");
  auto a2 = open(server_->http_port(), "dm-c1");
  ASSERT_NE(a1.conn, a2.conn);
  const auto r = send(server_->http_port(), R"({"conn":")" + a2.conn + R"(","body":"only you"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"delivered":1})");
  EXPECT_EQ(a2.client->expect("direct"), R"({"op":"direct","from":"server","body":"only you"})");
  expect_nothing_more(*a1.client);
}

TEST_F(DirectTest, AClosedUnknownOrForeignConnectionGetsNothing) {
  auto a = open(server_->http_port(), "dm-gone");
  const std::string conn = a.conn;
  a.client->close();
  // The close reaches the server's session table shortly after.
  HttpResult r;
  for (int i = 0; i < 100; ++i) {
    r = send(server_->http_port(), R"({"conn":")" + conn + R"(","body":1})");
    if (r.body == R"({"delivered":0})") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"delivered":0})");
  EXPECT_EQ(send(server_->http_port(), R"({"conn":"cfffffffff","body":1})").body, R"({"delivered":0})");
  // Another tenant's connection is not reachable with this tenant's key.
  auto other = open(server_->http_port(), "dm-other", "other");
  r = send(server_->http_port(), R"({"conn":")" + other.conn + R"(","body":1})");
  EXPECT_EQ(r.body, R"({"delivered":0})");
  expect_nothing_more(*other.client);
  r = send(server_->http_port(), R"({"conn":")" + other.conn + R"(","body":2})", kOtherApiKey);
  EXPECT_EQ(r.body, R"({"delivered":1})");
  EXPECT_EQ(other.client->expect("direct"), R"({"op":"direct","from":"server","body":2})");
}

TEST_F(DirectTest, ExactlyOneOfUserAndConnIsRequired) {
  for (const char* body : {R"({"body":1})", R"({"user":"u","conn":"c1","body":1})",
                           R"({"conn":"nope","body":1})", R"({"conn":"c","body":1})",
                           R"({"conn":"c0","body":1})", R"({"conn":"C1","body":1})",
                           R"({"conn":"c11111111111111111","body":1})", R"({"conn":1,"body":1})",
                           R"({"conn":"c1"})"}) {
    const auto r = send(server_->http_port(), body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(json_str(r.body, "code"), "bad_request") << body;
  }
  EXPECT_EQ(send(server_->http_port(), R"({"conn":"c1","body":1})", "wrong-key").status, 401);
}

TEST_F(DirectTest, PublishIntoAWorldReachesEveryMemberFromServer) {
  auto a = open(server_->http_port(), "w-a");
  auto b = open(server_->http_port(), "w-b");
  a.client->join("world:pub");
  b.client->join("world:pub");
  const auto r = http_request(server_->http_port(), "POST", "/v1/publish",
                              R"({"ch":"world:pub","id":"ev-1","body":{"weather":"rain"}})",
                              kDemoApiKey);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"seq":1,"dup":false})");
  for (auto* c : {a.client.get(), b.client.get()}) {
    const auto m = c->expect("msg");
    EXPECT_EQ(json_str(m, "from"), "server");
    EXPECT_EQ(json_str(m, "ch"), "world:pub");
    EXPECT_EQ(json_int(m, "seq"), 1);
    EXPECT_EQ(json_raw(m, "body"), R"({"weather":"rain"})");
  }
}

}  // namespace
}  // namespace parley::testing
