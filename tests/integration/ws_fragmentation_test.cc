// RFC 6455 conformance, part 2: fragmentation and UTF-8 (Autobahn|Testsuite
// sections 5 and 6), over hand-made frames.
#include "integration/ws_conformance.h"

namespace parley::testing {
namespace {

class WsFragmentation : public ::testing::Test {
 protected:
  uint16_t port() { return shared_server().http_port(); }
};

FrameSpec fragment(uint8_t opcode, std::string payload, bool fin) {
  return {.opcode = opcode, .payload = std::move(payload), .fin = fin};
}

// --- Fragmentation (5.4) -----------------------------------------------------

TEST_F(WsFragmentation, TextMessageInThreeFragmentsIsOneMessage) {
  auto ws = RawWs::open(port());
  const std::string hello = hello_frame(ServerProcess::token("u1"));
  ws->send_frame(fragment(ws_op::kText, hello.substr(0, 10), false));
  ws->send_frame(fragment(ws_op::kContinuation, hello.substr(10, 50), false));
  ws->send_frame(fragment(ws_op::kContinuation, hello.substr(60), true));
  const auto welcome = ws->next_text();
  ASSERT_TRUE(welcome);
  EXPECT_EQ(op_of(*welcome), "welcome") << *welcome;
  // Had a fragment been taken for a message, its error would come before this.
  EXPECT_TRUE(answers_ping_op(*ws, 2));
}

TEST_F(WsFragmentation, EmptyFragmentsAreAllowed) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kText, "", false));
  ws->send_frame(fragment(ws_op::kContinuation, R"({"op":"ping","rid":3})", false));
  ws->send_frame(fragment(ws_op::kContinuation, "", true));
  EXPECT_EQ(without_server_time(ws->next_text()), R"({"op":"pong","rid":3})");
}

TEST_F(WsFragmentation, PingBetweenFragmentsIsAnsweredAndTheMessageCompletes) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kText, R"({"op":"pi)", false));
  ws->send_frame({ws_op::kPing, "between"});
  // 5.4: control frames may be injected in the middle of a fragmented message.
  auto pong = ws->read_frame();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->opcode, ws_op::kPong);
  EXPECT_EQ(pong->payload, "between");
  ws->send_frame(fragment(ws_op::kContinuation, R"(ng","rid":4})", true));
  EXPECT_EQ(without_server_time(ws->next_text()), R"({"op":"pong","rid":4})");
}

TEST_F(WsFragmentation, ContinuationWithoutStartIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kContinuation, R"({"op":"ping","rid":1})", true));
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFragmentation, ContinuationAfterAFinalFrameIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kText, R"({"op":"ping","rid":1})", true));
  ws->send_frame(fragment(ws_op::kContinuation, "  ", true));
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFragmentation, NewTextFrameInsideAFragmentedMessageIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kText, R"({"op":)", false));
  ws->send_frame(fragment(ws_op::kText, R"({"op":"ping","rid":1})", true));
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFragmentation, FragmentedPingIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kPing, "frag", false));
  ws->send_frame(fragment(ws_op::kContinuation, "ment", true));
  EXPECT_TRUE(ws->expect_close(1002));
}

TEST_F(WsFragmentation, FragmentedCloseIsClosedWith1002) {
  auto ws = open_session(port());
  ws->send_frame(fragment(ws_op::kClose, close_payload(1000), false));
  ws->send_frame(fragment(ws_op::kContinuation, "", true));
  EXPECT_TRUE(ws->expect_close(1002));
}

// --- UTF-8 (8.1: invalid UTF-8 in a text message fails with 1007) -----------------

struct BadUtf8 {
  const char* name;
  std::string bytes;
};

class WsInvalidUtf8 : public WsFragmentation, public ::testing::WithParamInterface<BadUtf8> {};

TEST_P(WsInvalidUtf8, InTextMessageIsClosedWith1007) {
  auto ws = open_session(port());
  ws->send_text(R"({"op":"ping","rid":")" + GetParam().bytes + R"("})");
  EXPECT_TRUE(ws->expect_close(1007));
}

TEST_P(WsInvalidUtf8, InTheFirstFragmentIsClosedWith1007BeforeTheMessageEnds) {
  auto ws = open_session(port());
  // Fail fast (Autobahn 6.4): the rest of the message never comes.
  ws->send_frame(fragment(ws_op::kText, R"({"op":"ping","rid":")" + GetParam().bytes + "xx", false));
  EXPECT_TRUE(ws->expect_close(1007));
}

INSTANTIATE_TEST_SUITE_P(
    Utf8, WsInvalidUtf8,
    ::testing::Values(BadUtf8{"LoneContinuationByte", "\x80"}, BadUtf8{"ByteFF", "\xff"},
                      BadUtf8{"OverlongSlash", "\xc0\xaf"},
                      BadUtf8{"OverlongThreeBytes", "\xe0\x80\xaf"},
                      BadUtf8{"Surrogate", "\xed\xa0\x80"},
                      BadUtf8{"AboveU10FFFF", "\xf4\x90\x80\x80"},
                      BadUtf8{"TruncatedSequence", "\xe2\x82 "}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(WsFragmentation, MessageEndingInsideAMultiByteCharacterIsClosedWith1007) {
  auto ws = open_session(port());
  ws->send_text(std::string(R"({"op":"ping","rid":1}  )") + "\xe2\x82");
  EXPECT_TRUE(ws->expect_close(1007));
}

TEST_F(WsFragmentation, ValidMultiByteUtf8IsAccepted) {
  auto ws = open_session(port());
  const std::string rid = "h\xc3\xa9llo \xe2\x9c\x93 \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80";  // héllo ✓ 世界 😀
  ws->send_text(R"({"op":"ping","rid":")" + rid + R"("})");
  const auto pong = ws->next_text();
  ASSERT_TRUE(pong);
  EXPECT_EQ(op_of(*pong), "pong") << *pong;
  EXPECT_EQ(json_str(*pong, "rid"), rid);
}

TEST_F(WsFragmentation, MultiByteCharacterSplitAcrossFragmentsIsAccepted) {
  auto ws = open_session(port());
  const std::string emoji = "\xf0\x9f\x98\x80";  // 😀, cut after its second byte
  ws->send_frame(fragment(ws_op::kText, R"({"op":"ping","rid":"a)" + emoji.substr(0, 2), false));
  ws->send_frame(fragment(ws_op::kContinuation, emoji.substr(2, 1), false));
  ws->send_frame(fragment(ws_op::kContinuation, emoji.substr(3) + R"(b"})", true));
  const auto pong = ws->next_text();
  ASSERT_TRUE(pong);
  EXPECT_EQ(json_str(*pong, "rid"), "a" + emoji + "b") << *pong;
}

}  // namespace
}  // namespace parley::testing
