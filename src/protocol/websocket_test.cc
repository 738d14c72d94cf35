#include "protocol/websocket.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

namespace parley::protocol::ws {
namespace {

std::vector<uint8_t> bytes(std::initializer_list<int> l) {
  std::vector<uint8_t> v;
  for (int b : l) v.push_back(static_cast<uint8_t>(b));
  return v;
}

TEST(WsHeader, SevenBitMaskedText) {
  auto b = bytes({0x81, 0x85, 1, 2, 3, 4});
  FrameHeader h;
  ASSERT_EQ(parse_header(b.data(), b.size(), h), HeaderStatus::kOk);
  EXPECT_TRUE(h.fin);
  EXPECT_EQ(h.opcode, kText);
  EXPECT_TRUE(h.masked);
  EXPECT_EQ(h.payload_len, 5u);
  EXPECT_EQ(h.header_len, 6u);
  EXPECT_EQ(h.mask[3], 4);
}

TEST(WsHeader, NeedsEveryHeaderByte) {
  auto b = bytes({0x82, 0xFE, 0x01, 0x00, 9, 9, 9, 9});
  FrameHeader h;
  for (size_t n = 0; n < b.size(); ++n) {
    EXPECT_EQ(parse_header(b.data(), n, h), HeaderStatus::kNeedMore) << n;
  }
  ASSERT_EQ(parse_header(b.data(), b.size(), h), HeaderStatus::kOk);
  EXPECT_EQ(h.payload_len, 256u);
  EXPECT_EQ(h.header_len, 8u);
}

TEST(WsHeader, SixtyFourBitLengthWithTopBitIsInvalid) {
  auto b = bytes({0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0});
  FrameHeader h;
  EXPECT_EQ(parse_header(b.data(), b.size(), h), HeaderStatus::kInvalid);
}

TEST(WsHeader, ClientRulesGiveTheRightCloseCodes) {
  FrameHeader h;
  h.fin = true;
  h.opcode = kText;
  h.masked = true;
  h.payload_len = 10;
  EXPECT_EQ(check_client_header(h, 100), 0);
  h.payload_len = 101;
  EXPECT_EQ(check_client_header(h, 100), 1009);
  h.payload_len = 10;
  h.masked = false;
  EXPECT_EQ(check_client_header(h, 100), 1002);
  h.masked = true;
  h.rsv = 4;
  EXPECT_EQ(check_client_header(h, 100), 1002);
  h.rsv = 0;
  h.opcode = 3;
  EXPECT_EQ(check_client_header(h, 100), 1002);
  h.opcode = kPing;
  h.payload_len = 126;
  EXPECT_EQ(check_client_header(h, 1000), 1002);
  h.payload_len = 125;
  h.fin = false;
  EXPECT_EQ(check_client_header(h, 1000), 1002);
}

TEST(WsHeader, ServerHeadersUseTheShortestLength) {
  uint8_t out[kMaxServerHeader];
  EXPECT_EQ(encode_server_header(kText, 125, out), 2u);
  EXPECT_EQ(out[0], 0x81);
  EXPECT_EQ(out[1], 125);
  EXPECT_EQ(encode_server_header(kBinary, 126, out), 4u);
  EXPECT_EQ(out[1], 126);
  EXPECT_EQ(encode_server_header(kText, 65536, out), 10u);
  EXPECT_EQ(out[1], 127);
  EXPECT_EQ(out[7], 1);  // 0x00..0x01 0x00 0x00
  FrameHeader h;
  ASSERT_EQ(parse_header(out, 10, h), HeaderStatus::kOk);
  EXPECT_EQ(h.payload_len, 65536u);
  EXPECT_FALSE(h.masked);
}

TEST(WsMask, UnmaskingInPiecesEqualsUnmaskingAtOnce) {
  const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
  std::string text = "The quick brown fox jumps over the lazy dog, twice over.";
  std::vector<uint8_t> whole(text.begin(), text.end());
  unmask(whole.data(), whole.size(), mask);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    std::vector<uint8_t> parts(text.begin(), text.end());
    unmask(parts.data(), cut, mask, 0);
    unmask(parts.data() + cut, parts.size() - cut, mask, cut);
    EXPECT_EQ(parts, whole) << cut;
  }
  unmask(whole.data(), whole.size(), mask);
  EXPECT_EQ(std::string(whole.begin(), whole.end()), text);
}

TEST(WsClose, PayloadsAreCheckedAsRfc6455Says) {
  int code = 0;
  EXPECT_EQ(check_close_payload("", code), 0);
  EXPECT_EQ(code, 1005);
  EXPECT_EQ(check_close_payload(std::string("\x03", 1), code), 1002);
  EXPECT_EQ(check_close_payload(close_payload(1000, "bye"), code), 0);
  EXPECT_EQ(code, 1000);
  EXPECT_EQ(check_close_payload(close_payload(4010, ""), code), 0);
  EXPECT_EQ(code, 4010);
  for (int bad : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000}) {
    EXPECT_EQ(check_close_payload(close_payload(bad, ""), code), 1002) << bad;
  }
  EXPECT_EQ(check_close_payload(std::string("\x03\xe8\xff", 3), code), 1007);
}

TEST(WsClose, LongReasonsAreCutBetweenCharacters) {
  std::string reason;
  for (int i = 0; i < 60; ++i) reason += "\xc3\xa9";  // 120 bytes of 'é'
  reason = "x" + reason + "zzzz";
  const auto p = close_payload(1000, reason);
  EXPECT_LE(p.size(), kMaxControlPayload);
  int code = 0;
  EXPECT_EQ(check_close_payload(p, code), 0);
}

TEST(WsUtf8, AgreesWithSimdjsonAtEverySplitPoint) {
  const std::vector<std::string> samples = {
      "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac euro", "\xf0\x9f\x98\x80 smile",
      "\x80", "\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
      "\xe2\x82", "ok \xf0\x9f\x98", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"};
  for (const auto& s : samples) {
    const bool valid = simdjson::validate_utf8(s.data(), s.size());
    for (size_t cut = 0; cut <= s.size(); ++cut) {
      Utf8Checker c;
      const bool ok = c.feed(s.substr(0, cut)) && c.feed(s.substr(cut)) && c.complete();
      EXPECT_EQ(ok, valid) << "sample " << s << " cut " << cut;
    }
  }
}

TEST(WsUtf8, FailsAsSoonAsASequenceCannotBeCompleted) {
  Utf8Checker c;
  EXPECT_TRUE(c.feed("\xe2\x82"));  // may still become a euro sign
  EXPECT_FALSE(c.complete());
  Utf8Checker d;
  EXPECT_FALSE(d.feed("\xe0\x80"));  // overlong whatever follows
}

TEST(WsUtf8, ResetForgetsAPendingSequence) {
  Utf8Checker c;
  EXPECT_TRUE(c.feed("\xe0"));  // the next byte must be A0..BF
  c.reset();
  EXPECT_TRUE(c.feed("\xc2\x80"));
  EXPECT_TRUE(c.complete());
}

TEST(WsHandshake, AcceptKeyIsTheRfcSample) {
  EXPECT_EQ(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_TRUE(valid_client_key("dGhlIHNhbXBsZSBub25jZQ=="));
  EXPECT_FALSE(valid_client_key("c2hvcnQ="));
  EXPECT_FALSE(valid_client_key(""));
}

}  // namespace
TEST(WsSubprotocol, TheFirstOfferedThatParleySpeaks) {
  EXPECT_EQ(select_subprotocol("parley.v1.msgpack"), kSubprotocolMsgpack);
  EXPECT_EQ(select_subprotocol("chat, parley.v1.json ,parley.v1.msgpack"), kSubprotocolJson);
  EXPECT_EQ(select_subprotocol(" x,\tparley.v1.msgpack\t"), kSubprotocolMsgpack);
  EXPECT_EQ(select_subprotocol(""), "");
  EXPECT_EQ(select_subprotocol("parley.v1.msgpackx, parley.v2.json"), "");
}

}  // namespace parley::protocol::ws
