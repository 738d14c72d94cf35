// Heartbeats (PROTOCOL.md "Connecting"): the server pings every heartbeat_ms
// and closes a WebSocket connection that has not answered two pings.
#include <gtest/gtest.h>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr int kHeartbeatMs = 200;

class HeartbeatTest : public SharedServerTest<HeartbeatTest> {
 public:
  static ServerSpec server_spec() {
    ServerSpec spec;
    spec.server_extra = "heartbeat_ms = " + std::to_string(kHeartbeatMs);
    return spec;
  }
};

TEST_F(HeartbeatTest, WelcomeAnnouncesTheHeartbeat) {
  auto c = Client::connect(server_->http_port());
  EXPECT_EQ(json_int(c->hello(ServerProcess::token("hb0")), "heartbeat_ms"), kHeartbeatMs);
}

TEST_F(HeartbeatTest, ServerPingsAnAuthenticatedConnection) {
  auto ws = RawWs::open(server_->http_port());
  ASSERT_EQ(op_of(ws->hello(ServerProcess::token("hb1"))), "welcome");
  auto f = ws->read_frame(std::chrono::milliseconds(kHeartbeatMs * 5));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->opcode, ws_op::kPing);
}

TEST_F(HeartbeatTest, ConnectionThatNeverAnswersIsClosedAfterTwoUnansweredPings) {
  auto ws = RawWs::open(server_->http_port());
  ASSERT_EQ(op_of(ws->hello(ServerProcess::token("hb2"))), "welcome");
  int pings = 0;
  std::optional<ServerFrame> close;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHeartbeatMs * 15);
  while (std::chrono::steady_clock::now() < deadline) {
    auto f = ws->read_frame(std::chrono::milliseconds(kHeartbeatMs * 5));
    if (!f) break;
    if (f->opcode == ws_op::kPing) ++pings;  // never answered
    if (f->opcode == ws_op::kClose) {
      close = f;
      break;
    }
  }
  EXPECT_EQ(pings, 2);
  ASSERT_TRUE(close.has_value()) << "not closed after " << pings << " unanswered pings";
  EXPECT_EQ(close->close_code(), 1001);
}

TEST_F(HeartbeatTest, ConnectionThatAnswersPingsStaysOpen) {
  auto c = Client::connect(server_->http_port());  // Beast answers pings itself
  ASSERT_EQ(op_of(c->hello(ServerProcess::token("hb3"))), "welcome");
  // Ten heartbeat periods of silence from the application.
  EXPECT_FALSE(c->wait_closed(std::chrono::milliseconds(kHeartbeatMs * 10)).has_value());
  c->send(R"({"op":"ping","rid":9})");
  EXPECT_EQ(json_int(c->expect("pong"), "rid"), 9);
}

// Raw TCP has no pings (docs/protocol-notes.md): silence for two heartbeat
// periods closes it, and any frame, e.g. the `ping` op, keeps it open.
TEST_F(HeartbeatTest, SilentTcpConnectionIsClosedAfterTwoPeriods) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  ASSERT_EQ(op_of(c->hello(ServerProcess::token("hb4"))), "welcome");
  EXPECT_TRUE(c->wait_closed(std::chrono::milliseconds(kHeartbeatMs * 10)).has_value());
}

TEST_F(HeartbeatTest, TcpConnectionSendingPingOpsStaysOpen) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  ASSERT_EQ(op_of(c->hello(ServerProcess::token("hb5"))), "welcome");
  for (int i = 0; i < 10; ++i) {
    c->send(R"({"op":"ping","rid":)" + std::to_string(i) + "}");
    ASSERT_EQ(json_int(c->expect("pong"), "rid"), i);
    ASSERT_FALSE(c->wait_closed(std::chrono::milliseconds(kHeartbeatMs / 2)).has_value());
  }
}

}  // namespace
}  // namespace parley::testing
