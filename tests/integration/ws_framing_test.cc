// RFC 6455 conformance, part 1: framing, ping/pong, reserved bits, opcodes and
// masking (Autobahn|Testsuite sections 1-4), over hand-made frames.
#include "integration/ws_conformance.h"

namespace parley::testing {
namespace {

class WsFraming : public ::testing::Test {
 protected:
  uint16_t port() { return shared_server().http_port(); }
};

// RFC 6455 5.2: the extra length bytes a payload of n bytes needs.
int minimal_length_bytes(size_t n) { return n < 126 ? 0 : n <= 0xffff ? 2 : 8; }

// --- Framing (5.2) ----------------------------------------------------------

TEST_F(WsFraming, HelloInOneTextFrameIsAnsweredWithWelcome) {
  auto ws = RawWs::open(port());
  const auto welcome = ws->hello(ServerProcess::token("u1"), 4);
  EXPECT_EQ(op_of(welcome), "welcome") << welcome;
  EXPECT_EQ(json_int(welcome, "rid"), 4);
}

TEST_F(WsFraming, FrameWithSevenBitLengthIsRead) {
  auto ws = open_session(port());
  const auto op = ping_op_of_size(7, 125);
  ASSERT_EQ(encode_frame({ws_op::kText, op})[1] & 0x7f, 125);
  ws->send_text(op);
  const auto pong = ws->next_text();
  ASSERT_TRUE(pong);
  EXPECT_EQ(without_server_time(*pong), R"({"op":"pong","rid":7})");
}

TEST_F(WsFraming, FrameWithSixteenBitLengthIsRead) {
  auto ws = open_session(port());
  const auto op = ping_op_of_size(16, 65535);
  ASSERT_EQ(encode_frame({ws_op::kText, op})[1] & 0x7f, 126);
  ws->send_text(op);
  const auto pong = ws->next_text();
  ASSERT_TRUE(pong);
  EXPECT_EQ(without_server_time(*pong), R"({"op":"pong","rid":16})");
}

TEST_F(WsFraming, FrameWithSixtyFourBitLengthIsRead) {
  auto ws = open_session(port());
  const auto op = ping_op_of_size(64, kSharedMaxMessageBytes);  // under demo's limit
  ASSERT_EQ(encode_frame({ws_op::kText, op})[1] & 0x7f, 127);
  ws->send_text(op);
  const auto pong = ws->next_text();
  ASSERT_TRUE(pong);
  EXPECT_EQ(without_server_time(*pong), R"({"op":"pong","rid":64})");
}

TEST_F(WsFraming, FrameWrittenOneByteAtATimeIsOneMessage) {
  auto ws = RawWs::open(port());
  ws->send_bytes_one_at_a_time(
      encode_frame({ws_op::kText, hello_frame(ServerProcess::token("u1"), 2)}));
  const auto welcome = ws->next_text();
  ASSERT_TRUE(welcome);
  EXPECT_EQ(op_of(*welcome), "welcome") << *welcome;
}

TEST_F(WsFraming, TwoFramesInOneWriteAreTwoMessages) {
  auto ws = open_session(port());
  ws->send_bytes(encode_frame({ws_op::kText, R"({"op":"ping","rid":1})"}) +
                 encode_frame({ws_op::kText, R"({"op":"ping","rid":2})"}));
  EXPECT_EQ(without_server_time(ws->next_text()), R"({"op":"pong","rid":1})");
  EXPECT_EQ(without_server_time(ws->next_text()), R"({"op":"pong","rid":2})");
}

TEST_F(WsFraming, EmptyTextMessageGetsBadRequestAndTheConnectionStaysOpen) {
  auto ws = open_session(port());
  ws->send_text("");
  const auto err = ws->next_text();
  ASSERT_TRUE(err);
  EXPECT_EQ(op_of(*err), "error") << *err;
  EXPECT_EQ(json_str(*err, "code"), "bad_request");
  EXPECT_TRUE(answers_ping_op(*ws, 3));
}

// RFC 6455 5.1: a server MUST NOT mask; 5.2: lengths use the minimal encoding.
TEST_F(WsFraming, ServerFramesAreUnmaskedFinalTextFramesWithMinimalLengths) {
  auto ws = RawWs::open(port());
  ws->send_text(hello_frame(ServerProcess::token("big")));
  auto welcome = ws->read_frame();
  ASSERT_TRUE(welcome);
  EXPECT_TRUE(welcome->fin);
  EXPECT_EQ(welcome->rsv, 0);
  EXPECT_EQ(welcome->opcode, ws_op::kText);
  EXPECT_FALSE(welcome->masked);
  EXPECT_EQ(welcome->length_bytes, 0) << "a " << welcome->payload.size() << "-byte frame";

  ws->send_text(R"({"op":"join","ch":"chat:frames","rid":2})");
  ASSERT_EQ(op_of(ws->next_text().value_or("")), "joined");
  // History replies grow with the messages: one of ~300 bytes, one of ~70 KB.
  for (const size_t n : {size_t(300), size_t(70000)}) {
    ws->send_text(R"({"op":"pub","ch":"chat:frames","id":"m)" + std::to_string(n) +
                  R"(","body":")" + std::string(n, 'x') + R"(","rid":3})");
    auto ack = ws->next_text();
    while (ack && op_of(*ack) != "ack") ack = ws->next_text();
    ASSERT_TRUE(ack) << "no ack";
    std::optional<ServerFrame> f;
    ws->send_text(R"({"op":"history","ch":"chat:frames","after":0,"rid":4})");
    while ((f = ws->read_frame()) && !f->payload.starts_with(R"({"op":"history")")) {}
    ASSERT_TRUE(f) << "no history reply";
    EXPECT_FALSE(f->masked);
    EXPECT_TRUE(f->fin);
    EXPECT_EQ(f->length_bytes, minimal_length_bytes(f->payload.size())) << f->payload.size();
  }
}

// --- Ping and pong (5.5.2, 5.5.3) -------------------------------------------

TEST_F(WsFraming, PingIsAnsweredWithPongCarryingTheSamePayload) {
  auto ws = open_session(port());
  std::string payload;
  for (int i = 0; i < 125; ++i) payload += static_cast<char>(i * 2);  // binary, 125 bytes
  ws->send_frame({ws_op::kPing, payload});
  auto pong = ws->read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->opcode, ws_op::kPong);
  EXPECT_TRUE(pong->fin);
  EXPECT_FALSE(pong->masked);
  EXPECT_EQ(pong->payload, payload);
}

TEST_F(WsFraming, EmptyPingIsAnsweredWithEmptyPong) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kPing, ""});
  auto pong = ws->read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->opcode, ws_op::kPong);
  EXPECT_EQ(pong->payload, "");
}

TEST_F(WsFraming, PingBeforeHelloIsAnswered) {
  auto ws = RawWs::open(port());
  ws->send_frame({ws_op::kPing, "early"});
  auto pong = ws->read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->opcode, ws_op::kPong);
  EXPECT_EQ(pong->payload, "early");
}

TEST_F(WsFraming, UnsolicitedPongIsIgnored) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kPong, "unsolicited"});
  ws->send_text(R"({"op":"ping","rid":5})");
  // Nothing answers the pong: the next frame is the reply to the ping op.
  auto f = ws->read_frame();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->opcode, ws_op::kText);
  EXPECT_EQ(without_server_time(f->payload), R"({"op":"pong","rid":5})");
}

TEST_F(WsFraming, PingWithPayloadOver125BytesIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kPing, std::string(126, 'p')});
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFraming, PongWithPayloadOver125BytesIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kPong, std::string(126, 'p')});
  EXPECT_TRUE(ws->expect_close(1002));
}

// --- Reserved bits (5.2: MUST be 0 unless an extension says otherwise) --------

class WsReservedBit : public WsFraming, public ::testing::WithParamInterface<uint8_t> {};

TEST_P(WsReservedBit, OnTextFrameWithoutExtensionIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({.opcode = ws_op::kText, .payload = R"({"op":"ping","rid":1})", .rsv = GetParam()});
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_P(WsReservedBit, OnPingIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({.opcode = ws_op::kPing, .payload = "x", .rsv = GetParam()});
  EXPECT_TRUE(ws->expect_close(1002));
}

INSTANTIATE_TEST_SUITE_P(Rsv, WsReservedBit, ::testing::Values(kRsv1, kRsv2, kRsv3),
                         [](const auto& info) {
                           return info.param == kRsv1 ? "Rsv1" : info.param == kRsv2 ? "Rsv2" : "Rsv3";
                         });

// --- Opcodes (5.2: reserved opcodes fail the connection) -------------------------

class WsReservedOpcode : public WsFraming, public ::testing::WithParamInterface<uint8_t> {};

TEST_P(WsReservedOpcode, IsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({.opcode = GetParam(), .payload = "reserved"});
  EXPECT_TRUE(ws->expect_close(1002));
}

INSTANTIATE_TEST_SUITE_P(Opcode, WsReservedOpcode,
                         ::testing::Values(0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF),
                         [](const auto& info) { return "Op" + std::to_string(info.param); });

// docs/protocol-notes.md: the protocol is text; binary gets bad_request, not a close.
TEST_F(WsFraming, BinaryMessageGetsBadRequestAndTheConnectionStaysOpen) {
  auto ws = open_session(port());
  ws->send_frame({ws_op::kBinary, R"({"op":"ping","rid":1})"});
  const auto err = ws->next_text();
  ASSERT_TRUE(err);
  EXPECT_EQ(op_of(*err), "error") << *err;
  EXPECT_EQ(json_str(*err, "code"), "bad_request");
  EXPECT_TRUE(answers_ping_op(*ws, 2));
}

// --- Masking (5.1: the server MUST close on an unmasked client frame) -----------

TEST_F(WsFraming, UnmaskedTextFrameIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({.opcode = ws_op::kText, .payload = R"({"op":"ping","rid":1})", .masked = false});
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFraming, UnmaskedPingIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame({.opcode = ws_op::kPing, .payload = "x", .masked = false});
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFraming, UnmaskedHelloIsClosedWith1002) {
  auto ws = RawWs::open(port());
  ws->send_frame({.opcode = ws_op::kText,
                  .payload = R"({"op":"hello","v":1,"token":")" + ServerProcess::token("u1") + R"("})",
                  .masked = false});
  EXPECT_TRUE(ws->expect_close(1002));
}

}  // namespace
}  // namespace parley::testing
