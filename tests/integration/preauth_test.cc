// Before `welcome` (issue 11, findings 5 and 14): a connection that has not
// authenticated is held to a small frame limit and answered unauthorized/4001
// for anything but a valid hello, an oversized frame included.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <thread>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

// The header of a masked WebSocket text frame announcing `len` payload bytes
// (64-bit length form), mask 0: the payload may follow as plain bytes.
std::string ws_text_header(uint64_t len) {
  std::string h("\x81\xFF", 2);
  for (int i = 7; i >= 0; --i) h.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  h.append(4, '\0');
  return h;
}

std::string length_prefix(uint32_t len) {
  std::string p;
  for (int i = 3; i >= 0; --i) p.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  return p;
}

int64_t metric(uint16_t port, const std::string& series) { return metric_value(port, series); }

int64_t rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

class PreauthTest : public SharedServerTest<PreauthTest> {
 protected:
  // The next frame is unauthorized and the connection closes (4001 on
  // WebSocket; raw TCP has no close codes).
  static void expect_unauthorized_close(Client& c, Wire wire) {
    auto e = c.next();
    ASSERT_TRUE(e.has_value()) << "no answer";
    EXPECT_EQ(op_of(*e), "error") << *e;
    EXPECT_EQ(json_str(*e, "code"), "unauthorized") << *e;
    EXPECT_EQ(c.wait_closed(), wire == Wire::kWebSocket ? 4001 : 0);
  }
};

class PreauthOnEachWire : public PreauthTest, public ::testing::WithParamInterface<Wire> {};

TEST_P(PreauthOnEachWire, OversizedFrameBeforeHelloIsUnauthorizedAndCloses) {
  // 100 KB: under the transports' hard limit (4 x 64 KiB), so it used to be
  // parsed and answered too_large, leaving the socket open and unauthenticated.
  auto c = Client::connect(server_->port(GetParam()), GetParam());
  c->send(R"({"op":"ping","rid":1,"pad":")" + std::string(100 * 1024, 'p') + "\"}");
  expect_unauthorized_close(*c, GetParam());
}

TEST_P(PreauthOnEachWire, HelloOverThePreauthFrameLimitIsUnauthorized) {
  // A hello needs a few hundred bytes; 8 KiB is the documented pre-auth limit.
  auto c = Client::connect(server_->port(GetParam()), GetParam());
  c->send(R"({"op":"hello","v":1,"rid":1,"token":")" + ServerProcess::token("big") +
          R"(","pad":")" + std::string(9000, 'p') + "\"}");
  expect_unauthorized_close(*c, GetParam());
}

TEST_P(PreauthOnEachWire, HelloUnderThePreauthFrameLimitIsWelcome) {
  auto c = Client::connect(server_->port(GetParam()), GetParam());
  c->send(R"({"op":"hello","v":1,"rid":1,"token":")" + ServerProcess::token("padded") +
          R"(","pad":")" + std::string(7000, 'p') + "\"}");
  auto w = c->next();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(op_of(*w), "welcome") << *w;
}

TEST_P(PreauthOnEachWire, FramesAfterHelloMayUseTheTenantsLimit) {
  auto c = ::parley::testing::connect_as(server_->port(GetParam()), "after-hello", "demo", GetParam());
  c->join("chat:preauth-big");
  c->send(R"({"op":"pub","ch":"chat:preauth-big","id":"m1","rid":2,"body":")" +
          std::string(60 * 1024, 'b') + "\"}");
  EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
}

// PROTOCOL.md "Frame size before welcome": over 4 x the default tenant limit
// (a frame that closes 1009 after welcome) it is still unauthorized/4001.
TEST_P(PreauthOnEachWire, TwoMegabyteFrameBeforeHelloIsUnauthorizedNot1009) {
  auto c = Client::connect(server_->port(GetParam()), GetParam());
  c->send(R"({"op":"hello","v":1,"rid":1,"token":")" + ServerProcess::token("huge") +
          R"(","pad":")" + std::string(2 << 20, 'p') + "\"}");
  expect_unauthorized_close(*c, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Wires, PreauthOnEachWire, ::testing::Values(Wire::kWebSocket, Wire::kTcp),
                         [](const auto& info) {
                           return info.param == Wire::kWebSocket ? "WebSocket" : "Tcp";
                         });

TEST_F(PreauthTest, WebSocketFrameHeaderOverTheLimitIsRefusedBeforeItsPayload) {
  // Only the header of a 250 KB frame: it used to be awaited (buffering the
  // payload as it came) until the hello deadline.
  auto c = Client::connect(server_->http_port());
  c->send_raw(ws_text_header(250 * 1000));
  expect_unauthorized_close(*c, Wire::kWebSocket);
}

TEST_F(PreauthTest, TcpLengthPrefixOverTheLimitIsRefusedBeforeItsPayload) {
  auto c = Client::connect(server_->tcp_port(), Wire::kTcp);
  c->send_raw(length_prefix(250 * 1000));
  expect_unauthorized_close(*c, Wire::kTcp);
}

TEST_F(PreauthTest, BinaryFrameBeforeHelloIsUnauthorized) {
  auto c = Client::connect(server_->http_port());
  c->send_raw(std::string("\x82\x81\x00\x00\x00\x00\x07", 7));  // masked binary, 1 byte
  expect_unauthorized_close(*c, Wire::kWebSocket);
}

TEST(PreauthBudgetTest, StalledPartialFramesPastTheBudgetAreRefusedAndHelloStillWorks) {
  // A 64 KiB budget and 20 sockets each holding ~6 KB of a frame: the ones
  // past the budget are refused; a client that says hello is not affected,
  // and the budget is given back when the stalled sockets go.
  ServerSpec spec;
  spec.server_extra = "preauth_memory_bytes = 65536\nhello_timeout_ms = 60000";
  ServerProcess server(spec);
  server.start();
  std::vector<std::unique_ptr<RawWs>> stalled;
  for (int i = 0; i < 20; ++i) {
    stalled.push_back(RawWs::open(server.http_port()));
    stalled.back()->send_bytes(ws_text_header(8000) + std::string(6000, 'x'));
  }
  int refused = 0;
  for (auto& ws : stalled) {
    if (ws->silent_for(300ms)) continue;  // still holding its partial frame
    auto text = ws->next_text(1s);
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(json_str(*text, "code"), "unauthorized") << *text;
    EXPECT_TRUE(ws->expect_close(4001));
    ++refused;
  }
  std::cout << "refused " << refused << " of 20 stalled sockets\n";
  EXPECT_GE(refused, 8);   // 64 KiB holds ~10 of them
  EXPECT_LE(refused, 12);
  EXPECT_LE(metric(server.http_port(), "parley_preauth_bytes"), 65536 + 8192);
  auto c = connect_as(server.http_port(), "while-full");  // EXPECTs a welcome
  stalled.clear();
  bool released = false;
  for (int i = 0; i < 100 && !released; ++i) {
    released = metric(server.http_port(), "parley_preauth_bytes") == 0;
    if (!released) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(released) << metric(server.http_port(), "parley_preauth_bytes");
}

TEST(PreauthBudgetTest, StalledOversizedFramesDoNotGrowTheServer) {
  // The issue's measurement: sockets that send part of a 250 KB frame before
  // hello and stall. Each used to cost the part it sent (600 sockets with
  // 250 KB: 149 MiB); now each is refused from the header.
  ServerSpec spec;
  spec.server_extra = "hello_timeout_ms = 60000";
  ServerProcess server(spec);
  server.start();
  constexpr int kSockets = 200;
  constexpr size_t kSent = 200 * 1000;
  const int64_t before = rss_kib(server.pid());
  std::vector<std::unique_ptr<RawWs>> socks;
  const std::string bytes = ws_text_header(250 * 1000) + std::string(kSent, 'x');
  for (int i = 0; i < kSockets; ++i) {
    socks.push_back(RawWs::open(server.http_port()));
    socks.back()->send_bytes(bytes);
  }
  // Nothing to await: give the server's loops time to read what the kernel holds.
  std::this_thread::sleep_for(500ms);
  const int64_t after = rss_kib(server.pid());
  std::cout << "RSS before " << before << " KiB, with " << kSockets << " stalled sockets " << after
            << " KiB (+" << (after - before) / 1024 << " MiB; " << kSent * kSockets / (1 << 20)
            << " MiB were sent)\n";
  EXPECT_LT(after - before, 16 * 1024);
}

}  // namespace
}  // namespace parley::testing
