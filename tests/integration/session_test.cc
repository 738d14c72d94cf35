// Connecting and the basic ops of PROTOCOL.md, over WebSocket and raw TCP.
#include <gtest/gtest.h>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

class SessionTest : public SharedServerTest<SessionTest> {};

TEST_F(SessionTest, HelloIsAnsweredWithWelcome) {
  auto c = Client::connect(server_->http_port());
  auto w = c->hello(ServerProcess::token("u1"), 7);
  EXPECT_EQ(op_of(w), "welcome") << w;
  EXPECT_EQ(json_int(w, "rid"), 7);
  EXPECT_EQ(json_str(w, "user"), "u1");
  EXPECT_EQ(json_str(w, "tenant"), "demo");
  EXPECT_TRUE(json_str(w, "conn").has_value());
  EXPECT_EQ(json_int(w, "heartbeat_ms"), 25000);
}

TEST_F(SessionTest, PublishIsAckedThenDeliveredToEveryMemberIncludingThePublisher) {
  auto a = Client::connect(server_->http_port());
  auto b = Client::connect(server_->http_port());
  a->hello(ServerProcess::token("alice"));
  b->hello(ServerProcess::token("bob"));
  auto ja = a->join("chat:basic");
  EXPECT_EQ(json_int(ja, "seq"), 0) << ja;
  b->join("chat:basic");
  a->send(R"({"op":"pub","ch":"chat:basic","id":"m1","body":{"text":"hi"},"rid":"p1"})");
  auto ack = a->expect("ack");
  EXPECT_EQ(json_str(ack, "rid"), "p1") << ack;
  EXPECT_EQ(json_int(ack, "seq"), 1);
  EXPECT_EQ(json_bool(ack, "dup"), false);
  for (auto* c : {a.get(), b.get()}) {
    auto m = c->expect("msg");
    EXPECT_EQ(json_str(m, "ch"), "chat:basic") << m;
    EXPECT_EQ(json_int(m, "seq"), 1);
    EXPECT_EQ(json_str(m, "from"), "alice");
    EXPECT_EQ(json_str(m, "id"), "m1");
    EXPECT_EQ(json_raw(m, "body"), R"({"text":"hi"})");
    EXPECT_TRUE(json_int(m, "ts").has_value());
  }
}

TEST_F(SessionTest, RawTcpSpeaksTheSameProtocol) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  EXPECT_EQ(op_of(c->hello(ServerProcess::token("t1"))), "welcome");
  c->join("chat:tcp");
  c->send(R"({"op":"pub","ch":"chat:tcp","id":"x","body":1,"rid":2})");
  EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
  EXPECT_EQ(json_raw(c->expect("msg"), "body"), "1");
  c->send(R"({"op":"ping","rid":3})");
  EXPECT_EQ(json_int(c->expect("pong"), "rid"), 3);
}

}  // namespace
}  // namespace parley::testing
