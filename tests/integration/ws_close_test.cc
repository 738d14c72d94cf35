// RFC 6455 conformance, part 3: the closing handshake and close codes
// (Autobahn|Testsuite section 7) and message size limits (section 9, and
// PROTOCOL.md's 4 x max_message_bytes hard limit).
#include "integration/ws_conformance.h"

namespace parley::testing {
namespace {

class WsClose : public ::testing::Test {
 protected:
  uint16_t port() { return shared_server().http_port(); }
};

// The server's answer to a close the client started: a close frame, then TCP
// closed by the server (7.1.1).
::testing::AssertionResult answers_close_with(RawWs& ws, int code) {
  auto f = ws.read_frame();
  if (!f) return ::testing::AssertionFailure() << "no close frame came back";
  if (f->opcode != ws_op::kClose) {
    return ::testing::AssertionFailure() << "got opcode " << int(f->opcode) << " (" << f->payload
                                         << "), not a close";
  }
  if (f->close_code() != code) {
    return ::testing::AssertionFailure() << "close code " << f->close_code() << ", expected " << code;
  }
  if (!ws.wait_eof()) return ::testing::AssertionFailure() << "the server did not close TCP";
  return ::testing::AssertionSuccess();
}

// --- Closing handshake (5.5.1, 7.1) --------------------------------------------

TEST_F(WsClose, NormalCloseIsEchoedAndTcpIsClosed) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(1000)});
  EXPECT_TRUE(answers_close_with(*ws, 1000));
}

TEST_F(WsClose, CloseWithReasonIsEchoedWithItsCode) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(1000, "done for today \xe2\x9c\x93")});
  EXPECT_TRUE(answers_close_with(*ws, 1000));
}

TEST_F(WsClose, CloseWithTheLongestReasonIsEchoed) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(1000, std::string(123, 'r'))});  // 125 bytes
  EXPECT_TRUE(answers_close_with(*ws, 1000));
}

TEST_F(WsClose, EmptyCloseIsAnsweredWithClose) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, ""});
  auto f = ws->read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->opcode, ws_op::kClose);
  // 5.5.1 / 7.1.5: the answer may carry no code (1005) or a normal close.
  EXPECT_TRUE(f->close_code() == 1005 || f->close_code() == 1000) << f->close_code();
  EXPECT_TRUE(ws->wait_eof());
}

TEST_F(WsClose, CloseBeforeHelloIsEchoed) {
  auto ws = RawWs::open(port());
  ws->send_frame({ws_op::kClose, close_payload(1001)});
  EXPECT_TRUE(answers_close_with(*ws, 1001));
}

TEST_F(WsClose, FramesAfterCloseAreIgnored) {
  auto ws = open_session(port());
  ws->send_bytes(encode_frame({ws_op::kClose, close_payload(1000)}) +
                 encode_frame({ws_op::kText, R"({"op":"ping","rid":9})"}));
  EXPECT_TRUE(answers_close_with(*ws, 1000));  // and no pong before it
}

TEST_F(WsClose, ServerStartedCloseCompletesTheHandshake) {
  auto ws = RawWs::open(port());
  ws->send_text(R"({"op":"hello","v":1,"token":"not-a-jwt","rid":1})");
  const auto err = ws->next_text();
  ASSERT_TRUE(err);
  EXPECT_EQ(json_str(*err, "code"), "unauthorized") << *err;
  EXPECT_TRUE(ws->expect_close(4001));  // answers the close, then expects TCP closed
}

TEST_F(WsClose, CloseWithOneBytePayloadIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, std::string(1, '\x03')});
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsClose, CloseWithPayloadOver125BytesIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(1000, std::string(124, 'r'))});  // 126 bytes
  EXPECT_TRUE(ws->expect_close(1002));
}

// 8.1: invalid UTF-8 fails the connection. Autobahn 7.5.1 takes 1002 or 1007
// (Beast answers 1002); the close code is never echoed as a normal close.
TEST_F(WsClose, CloseReasonWithInvalidUtf8FailsTheConnection) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(1000, "bad \xc0\xaf reason")});
  EXPECT_TRUE(ws->expect_close_with_one_of({1002, 1007}));
}

// --- Close codes (7.4) ------------------------------------------------------------

class WsValidCloseCode : public WsClose, public ::testing::WithParamInterface<int> {};

TEST_P(WsValidCloseCode, IsEchoed) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(static_cast<uint16_t>(GetParam()))});
  EXPECT_TRUE(answers_close_with(*ws, GetParam()));
}

// Autobahn 7.7.x: the codes defined by 7.4.1, the registered and private ranges.
INSTANTIATE_TEST_SUITE_P(Codes, WsValidCloseCode,
                         ::testing::Values(1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011,
                                           3000, 3999, 4000, 4999),
                         [](const auto& info) { return "Code" + std::to_string(info.param); });

class WsInvalidCloseCode : public WsClose, public ::testing::WithParamInterface<int> {};

TEST_P(WsInvalidCloseCode, IsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(static_cast<uint16_t>(GetParam()))});
  EXPECT_TRUE(ws->expect_close(1002));
}

// Autobahn 7.9.x: 0-999 are not used; 1004, 1005, 1006 and 1015 are reserved and
// "MUST NOT be set as a status code in a Close control frame"; 1016-2999 are
// reserved for future revisions of the protocol.
INSTANTIATE_TEST_SUITE_P(Codes, WsInvalidCloseCode,
                         ::testing::Values(0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999),
                         [](const auto& info) { return "Code" + std::to_string(info.param); });

// Codes above 4999 are in no range of 7.4.2, so RFC 6455 does not say they are
// invalid; Autobahn (7.13.x) accepts an echo or a 1002. Either way the close
// completes and the code is never taken for a normal close.
TEST_F(WsClose, CloseCodeAbove4999EndsTheConnectionWithItsCodeOr1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kClose, close_payload(5000)});
  auto f = ws->read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->opcode, ws_op::kClose);
  EXPECT_TRUE(f->close_code() == 5000 || f->close_code() == 1002) << f->close_code();
  if (f->close_code() == 1002) ws->send_frame({ws_op::kClose, close_payload(1002)});
  EXPECT_TRUE(ws->wait_eof());
}

// --- Limits (PROTOCOL.md: a frame over 4 x max_message_bytes closes with 1009) ----

// Every tenant at 1 KiB, so the hard limit is 4 KiB whoever connects.
constexpr size_t kSmallLimit = 1024;

class WsLimits : public SharedServerTest<WsLimits> {
 public:
  static ServerSpec server_spec() {
    return websocket_spec(default_tenants_toml("max_message_bytes = 1024\n") +
                          "max_message_bytes = 1024\n");  // `other`'s
  }

 protected:
  uint16_t port() { return server_->http_port(); }
};

TEST_F(WsLimits, FrameOfFourTimesTheLimitGetsTooLargeWithItsRid) {
  auto ws = open_session(port());
  ws->send_text(ping_op_of_size(11, 4 * kSmallLimit));
  const auto err = ws->next_text();
  ASSERT_TRUE(err);
  EXPECT_EQ(op_of(*err), "error") << *err;
  EXPECT_EQ(json_str(*err, "code"), "too_large");
  EXPECT_EQ(json_int(*err, "rid"), 11);
  EXPECT_TRUE(answers_ping_op(*ws, 12));
}

TEST_F(WsLimits, FrameOverFourTimesTheLimitIsClosedWith1009) {
  auto ws = open_session(port());
  ws->send_text(ping_op_of_size(1, 4 * kSmallLimit + 1));
  EXPECT_TRUE(ws->expect_close(1009));
}

TEST_F(WsLimits, FragmentedMessageOverFourTimesTheLimitIsClosedWith1009) {
  auto ws = open_session(port());
  const auto op = ping_op_of_size(1, 4 * kSmallLimit + 1);
  ws->send_frame({.opcode = ws_op::kText, .payload = op.substr(0, 3000), .fin = false});
  ws->send_frame({.opcode = ws_op::kContinuation, .payload = op.substr(3000), .fin = true});
  EXPECT_TRUE(ws->expect_close(1009));
}

TEST_F(WsLimits, HugeDeclaredLengthIsClosedWith1009BeforeThePayloadArrives) {
  auto ws = open_session(port());
  // A 64-bit length of 1 GiB and a mask key; no payload follows.
  ws->send_bytes(std::string("\x81\xff\x00\x00\x00\x00\x40\x00\x00\x00", 10) + "mask");
  EXPECT_TRUE(ws->expect_close(1009));
}

}  // namespace
}  // namespace parley::testing
