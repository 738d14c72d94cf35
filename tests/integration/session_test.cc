// Connecting and the basic ops of PROTOCOL.md, over WebSocket, raw TCP and Unix sockets.
#include <gtest/gtest.h>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

class SessionTest : public SharedServerTest<SessionTest> {
 public:
  static ServerSpec server_spec() {
    ServerSpec spec;
    spec.unix_socket = true;
    return spec;
  }
};

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

TEST_F(SessionTest, UnixSocketSpeaksTheSameProtocol) {
  auto game_server = Client::connect(0, Wire::kUnix, "", server_->unix_path());
  auto player = Client::connect(server_->http_port());
  EXPECT_EQ(op_of(game_server->hello(ServerProcess::token("gs1"))), "welcome");
  EXPECT_EQ(op_of(player->hello(ServerProcess::token("p1"))), "welcome");
  game_server->join("chat:unix");
  player->join("chat:unix");
  game_server->send(R"({"op":"pub","ch":"chat:unix","id":"u1","body":{"round":1},"rid":5})");
  EXPECT_EQ(json_int(game_server->expect("ack"), "seq"), 1);
  auto m = player->expect("msg");
  EXPECT_EQ(json_str(m, "from"), "gs1") << m;
  EXPECT_EQ(json_raw(m, "body"), R"({"round":1})");
}

}  // namespace
}  // namespace parley::testing
