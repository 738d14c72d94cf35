#include "protocol/decoder.h"
#include "protocol/encoder.h"

#include <gtest/gtest.h>

#include <string>

namespace parley::protocol {
namespace {

ClientOp decode_ok(std::string_view frame, DecodeLimits limits = {}) {
  auto r = decode_client_op(frame, limits);
  if (const auto* f = std::get_if<DecodeFailure>(&r)) {
    ADD_FAILURE() << "decoding " << frame << " failed: " << wire_name(f->error.code) << ": "
                  << f->error.msg;
    return {};
  }
  return std::get<ClientOp>(std::move(r));
}

DecodeFailure decode_fail(std::string_view frame, DecodeLimits limits = {}) {
  auto r = decode_client_op(frame, limits);
  if (std::holds_alternative<ClientOp>(r)) {
    ADD_FAILURE() << "decoding " << frame << " succeeded";
    return {};
  }
  return std::get<DecodeFailure>(std::move(r));
}

void expect_bad_request(std::string_view frame, std::string_view msg, std::string_view rid = "") {
  SCOPED_TRACE(std::string(frame));
  const auto f = decode_fail(frame);
  EXPECT_EQ(f.error.code, ErrorCode::kBadRequest);
  EXPECT_EQ(f.error.msg, msg);
  EXPECT_EQ(f.rid, rid);
}

// --- happy paths, one per op ---------------------------------------------

TEST(DecodeHello, ReadsVersionTokenAndRid) {
  const auto op = decode_ok(R"({"op":"hello","v":1,"token":"a.b.c","rid":1})");
  EXPECT_EQ(op.kind, OpKind::kHello);
  EXPECT_EQ(op.v, 1);
  EXPECT_EQ(op.token, "a.b.c");
  EXPECT_EQ(op.rid, "1");
}

TEST(DecodeHello, ReturnsAnUnsupportedVersionForTheSessionToAnswer) {
  EXPECT_EQ(decode_ok(R"({"op":"hello","v":2,"token":"t"})").v, 2);
  EXPECT_EQ(decode_ok(R"({"op":"hello","v":-7,"token":"t"})").v, -7);
}

TEST(DecodeModeration, ReadsEditAndDeleteAndRefusesABadTarget) {
  auto op = decode_ok(R"({"op":"edit","rid":3,"ch":"chat:a","target":57,"body":{"t": 1}})");
  EXPECT_EQ(op.kind, OpKind::kEdit);
  EXPECT_EQ(op.ch, "chat:a");
  EXPECT_EQ(op.target, 57u);
  EXPECT_EQ(op.body, R"({"t":1})");
  op = decode_ok(R"({"op":"delete","ch":"chat:a","target":1})");
  EXPECT_EQ(op.kind, OpKind::kDelete);
  EXPECT_EQ(op.target, 1u);
  for (const char* bad : {R"({"op":"delete","ch":"chat:a"})", R"({"op":"delete","ch":"chat:a","target":0})",
                          R"({"op":"delete","ch":"chat:a","target":-1})", R"({"op":"delete","ch":"chat:a","target":1.5})",
                          R"({"op":"delete","ch":"chat:a","target":"1"})", R"({"op":"edit","ch":"chat:a","target":1})",
                          R"({"op":"edit","ch":"bad name","target":1,"body":1})"}) {
    EXPECT_EQ(decode_fail(bad).error.code, ErrorCode::kBadRequest) << bad;
  }
  DecodeLimits small;
  small.max_message_bytes = 16;
  EXPECT_EQ(decode_fail(R"({"op":"edit","ch":"c","target":1,"body":"0123456789abcdef"})", small).error.code,
            ErrorCode::kTooLarge);
}

TEST(DecodeJoin, ReadsChannelWithoutSince) {
  const auto op = decode_ok(R"({"op":"join","ch":"chat:lobby"})");
  EXPECT_EQ(op.kind, OpKind::kJoin);
  EXPECT_EQ(op.ch, "chat:lobby");
  EXPECT_FALSE(op.since.has_value());
  EXPECT_TRUE(op.rid.empty());
}

TEST(DecodeJoin, ReadsSinceUpToInt64Max) {
  EXPECT_EQ(decode_ok(R"({"op":"join","ch":"a","since":0})").since, 0u);
  EXPECT_EQ(decode_ok(R"({"op":"join","ch":"a","since":57})").since, 57u);
  EXPECT_EQ(decode_ok(R"({"op":"join","ch":"a","since":9223372036854775807})").since,
            9223372036854775807u);
}

TEST(DecodeLeave, ReadsChannel) {
  const auto op = decode_ok(R"({"op":"leave","ch":"world:7","rid":"x"})");
  EXPECT_EQ(op.kind, OpKind::kLeave);
  EXPECT_EQ(op.ch, "world:7");
  EXPECT_EQ(op.rid, R"("x")");
}

TEST(DecodePub, ReadsChannelIdAndMinifiedBody) {
  const auto op = decode_ok(
      R"({"op":"pub","ch":"chat:lobby","id":"c-81",)"
      R"("body":{ "text" : "hi  there", "n" : [1, 2] },"rid":3})");
  EXPECT_EQ(op.kind, OpKind::kPub);
  EXPECT_EQ(op.ch, "chat:lobby");
  EXPECT_EQ(op.id, "c-81");
  EXPECT_EQ(op.body, R"({"text":"hi  there","n":[1,2]})");
  EXPECT_EQ(op.rid, "3");
}

TEST(DecodePub, KeepsTheBodyTextExactlyAsWrittenApartFromWhitespace) {
  const auto op = decode_ok(
      "{\"op\":\"pub\",\"ch\":\"a\",\"id\":\"1\",\"body\":\n"
      "  {\"p\": 1.50, \"e\": 1E2, \"s\": \"\\u00e9\\n\\\"}\", \"z\": -0}\n}");
  EXPECT_EQ(op.body, R"({"p":1.50,"e":1E2,"s":"\u00e9\n\"}","z":-0})");
}

TEST(DecodePub, AcceptsAnyJsonValueAsBody) {
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"1","body":null})").body, "null");
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"1","body":"s p"})").body, R"("s p")");
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"1","body":-12.5e3 })").body, "-12.5e3");
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"1","body":[ ]})").body, "[]");
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"1","body":true})").body, "true");
}

TEST(DecodePub, FindsTheBodyWhereverItIsAndWhateverPrecedesIt) {
  const auto op = decode_ok(
      R"({"x":{"body":[1,{"}":"]"}]},"y":"\"body\"",)"
      R"("body" : [ "b" ] ,"op":"pub","ch":"a","id":"1"})");
  EXPECT_EQ(op.body, R"(["b"])");
}

TEST(DecodePub, FindsABodyKeyWrittenWithEscapes) {
  const auto op = decode_ok(R"({"op":"pub","ch":"a","id":"1","bod\u0079":{"k":1}})");
  EXPECT_EQ(op.body, R"({"k":1})");
}

TEST(DecodePub, AcceptsA64CharIdCountedInCodePoints) {
  const std::string ascii(64, 'i');
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","body":1,"id":")" + ascii + "\"}").id, ascii);
  std::string accented;
  for (int i = 0; i < 64; ++i) accented += "\xc3\xa9";
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","body":1,"id":")" + accented + "\"}").id,
            accented);
}

TEST(DecodeState, ReadsChannelKeyAndBody) {
  const auto op = decode_ok(R"({"op":"state","ch":"world:7","key":"pos","body":{"x": 1}})");
  EXPECT_EQ(op.kind, OpKind::kState);
  EXPECT_EQ(op.ch, "world:7");
  EXPECT_EQ(op.key, "pos");
  EXPECT_EQ(op.body, R"({"x":1})");
}

TEST(DecodeUp, ReadsChannelAndBody) {
  const auto op = decode_ok(R"({"op":"up","ch":"world:7","body":[1, "two"]})");
  EXPECT_EQ(op.kind, OpKind::kUp);
  EXPECT_EQ(op.ch, "world:7");
  EXPECT_EQ(op.body, R"([1,"two"])");
}

TEST(DecodeHistory, ReadsAfterWithDefaultLimit) {
  const auto op = decode_ok(R"({"op":"history","ch":"a","after":10})");
  EXPECT_EQ(op.kind, OpKind::kHistory);
  EXPECT_EQ(op.after, 10u);
  EXPECT_FALSE(op.before.has_value());
  EXPECT_EQ(op.limit, kHistoryDefaultLimit);
}

TEST(DecodeHistory, ReadsBeforeAndLimit) {
  const auto op = decode_ok(R"({"op":"history","ch":"a","before":0,"limit":7})");
  EXPECT_EQ(op.before, 0u);
  EXPECT_FALSE(op.after.has_value());
  EXPECT_EQ(op.limit, 7u);
}

TEST(DecodeHistory, CapsLargeLimits) {
  EXPECT_EQ(decode_ok(R"({"op":"history","ch":"a","after":1,"limit":1000})").limit, 1000u);
  EXPECT_EQ(decode_ok(R"({"op":"history","ch":"a","after":1,"limit":1001})").limit, 1000u);
  EXPECT_EQ(
      decode_ok(R"({"op":"history","ch":"a","after":1,"limit":18446744073709551615})").limit,
      1000u);
}

TEST(DecodePing, NeedsNothingButOp) {
  const auto op = decode_ok(R"({"op":"ping"})");
  EXPECT_EQ(op.kind, OpKind::kPing);
  EXPECT_TRUE(op.rid.empty());
}

TEST(Decode, IgnoresUnknownFieldsAndFieldsTheOpDoesNotUse) {
  const auto op = decode_ok(R"({"op":"ping","rid":2,"future":{"a":[1]},"ch":7,"body":1})");
  EXPECT_EQ(op.kind, OpKind::kPing);
  EXPECT_EQ(op.rid, "2");
}

TEST(Decode, AcceptsSurroundingWhitespace) {
  EXPECT_EQ(decode_ok(" \n\t{ \"op\" : \"ping\" }\r\n ").kind, OpKind::kPing);
}

// --- rid -----------------------------------------------------------------

TEST(DecodeRid, ReencodesIntegersAsDigits) {
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":0})").rid, "0");
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":-42})").rid, "-42");
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":18446744073709551615})").rid,
            "18446744073709551615");
}

TEST(DecodeRid, ReencodesStringsAsJson) {
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":"abc"})").rid, R"("abc")");
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":""})").rid, R"("")");
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":"q\"\\\n\u0041"})").rid, R"("q\"\\\nA")");
  const std::string longest(64, 'r');
  EXPECT_EQ(decode_ok(R"({"op":"ping","rid":")" + longest + "\"}").rid, '"' + longest + '"');
}

TEST(DecodeRid, RejectsOtherShapesWithoutEchoingThem) {
  const std::string msg = "rid must be an integer or a string of at most 64 chars";
  expect_bad_request(R"({"op":"ping","rid":1.5})", msg);
  expect_bad_request(R"({"op":"ping","rid":true})", msg);
  expect_bad_request(R"({"op":"ping","rid":null})", msg);
  expect_bad_request(R"({"op":"ping","rid":[1]})", msg);
  expect_bad_request(R"({"op":"ping","rid":{"a":1}})", msg);
  expect_bad_request(R"({"op":"ping","rid":")" + std::string(65, 'r') + "\"}", msg);
}

TEST(DecodeRid, IsEchoedWhenALaterFieldFails) {
  expect_bad_request(R"({"rid":9,"op":"join","ch":"bad name"})", "bad channel name", "9");
  expect_bad_request(R"({"op":"nope","rid":"r1"})", "unknown op", R"("r1")");
  expect_bad_request(R"({"rid":5})", "missing op", "5");
}

// --- not a frame -----------------------------------------------------------

TEST(DecodeFrame, RejectsNonJson) {
  expect_bad_request("", "frame is not valid JSON");
  expect_bad_request("{", "frame is not valid JSON");
  expect_bad_request(R"({"op":"ping"} {"op":"ping"})", "frame is not valid JSON");
  expect_bad_request(R"({"op":"ping",})", "frame is not valid JSON");
  expect_bad_request(R"({'op':'ping'})", "frame is not valid JSON");
  expect_bad_request("\xef\xbb\xbf{\"op\":\"ping\"}", "frame is not valid JSON");
}

TEST(DecodeFrame, RejectsInvalidUtf8AnywhereInTheFrame) {
  expect_bad_request("{\"op\":\"ping\",\"x\":\"\xff\"}", "frame is not valid UTF-8");
  expect_bad_request("{\"op\":\"pub\",\"ch\":\"a\",\"id\":\"1\",\"body\":\"\xc3\x28\"}",
                     "frame is not valid UTF-8");
  // An overlong encoding of '/' and a lone surrogate are invalid too.
  expect_bad_request("{\"op\":\"ping\",\"x\":\"\xc0\xaf\"}", "frame is not valid UTF-8");
  expect_bad_request("{\"op\":\"ping\",\"x\":\"\xed\xa0\x80\"}", "frame is not valid UTF-8");
}

TEST(DecodeFrame, RejectsNumbersOutsideTheParsersRange) {
  expect_bad_request(R"({"op":"pub","ch":"a","id":"1","body":1e400})", "frame is not valid JSON");
  expect_bad_request(R"({"op":"pub","ch":"a","id":"1","body":18446744073709551616})",
                     "frame is not valid JSON");
}

TEST(DecodeFrame, RejectsNonObjects) {
  expect_bad_request("[]", "frame is not a JSON object");
  expect_bad_request(R"([{"op":"ping"}])", "frame is not a JSON object");
  expect_bad_request(R"("ping")", "frame is not a JSON object");
  expect_bad_request("42", "frame is not a JSON object");
  expect_bad_request("null", "frame is not a JSON object");
}

TEST(DecodeFrame, RejectsMissingIllTypedOrUnknownOp) {
  expect_bad_request("{}", "missing op");
  expect_bad_request(R"({"op":1})", "op must be a string");
  expect_bad_request(R"({"op":null})", "op must be a string");
  expect_bad_request(R"({"op":"PING"})", "unknown op");
  expect_bad_request(R"({"op":"welcome"})", "unknown op");
  expect_bad_request(R"({"op":""})", "unknown op");
}

TEST(DecodeFrame, RejectsDuplicatedKnownFields) {
  expect_bad_request(R"({"op":"join","ch":"a","ch":"b","rid":1})", "duplicate field ch", "1");
  expect_bad_request(R"({"op":"ping","op":"ping"})", "duplicate field op");
  expect_bad_request(R"({"op":"ping","rid":1,"rid":2})", "duplicate field rid");
}

TEST(DecodeFrame, IgnoresDuplicatedUnknownFields) {
  EXPECT_EQ(decode_ok(R"({"op":"ping","x":1,"x":2})").kind, OpKind::kPing);
}

// --- op fields ---------------------------------------------------------------

TEST(DecodeHello, MissingOrIllTypedVersionIsVersionZero) {
  // The session answers any v other than 1 with bad_request and close 4002.
  EXPECT_EQ(decode_ok(R"({"op":"hello","token":"t","rid":1})").v, 0);
  EXPECT_EQ(decode_ok(R"({"op":"hello","v":"1","token":"t"})").v, 0);
  EXPECT_EQ(decode_ok(R"({"op":"hello","v":1.0,"token":"t"})").v, 0);
  EXPECT_EQ(decode_ok(R"({"op":"hello","v":9223372036854775808,"token":"t"})").v, 0);
}

TEST(DecodeHello, RejectsMissingOrIllTypedToken) {
  expect_bad_request(R"({"op":"hello","v":1})", "missing token");
  expect_bad_request(R"({"op":"hello","v":1,"token":null})", "token must be a string");
}

TEST(DecodeHello, NeverEchoesTheToken) {
  const auto f = decode_fail(R"({"op":"hello","v":1,"token":"secret-jwt","rid":[1]})");
  EXPECT_EQ(f.error.msg.find("secret"), std::string::npos);
}

TEST(DecodeChannel, RejectsMissingIllTypedAndBadNames) {
  expect_bad_request(R"({"op":"join"})", "missing ch");
  expect_bad_request(R"({"op":"leave","ch":5})", "ch must be a string");
  expect_bad_request(R"({"op":"join","ch":""})", "bad channel name");
  expect_bad_request(R"({"op":"join","ch":"a b"})", "bad channel name");
  expect_bad_request(R"({"op":"join","ch":"caf\u00e9"})", "bad channel name");
  expect_bad_request(R"({"op":"pub","ch":"a/b","id":"1","body":1})", "bad channel name");
  expect_bad_request(R"({"op":"history","ch":"a\u0000","after":1})", "bad channel name");
  expect_bad_request(R"({"op":"join","ch":")" + std::string(129, 'c') + "\"}",
                     "bad channel name");
  EXPECT_EQ(decode_ok(R"({"op":"join","ch":")" + std::string(128, 'c') + "\"}").ch.size(), 128u);
}

TEST(DecodeJoin, RejectsSinceThatIsNotANonNegativeInteger) {
  const std::string msg = "since must be a non-negative integer";
  expect_bad_request(R"({"op":"join","ch":"a","since":-1})", msg);
  expect_bad_request(R"({"op":"join","ch":"a","since":1.0})", msg);
  expect_bad_request(R"({"op":"join","ch":"a","since":1e3})", msg);
  expect_bad_request(R"({"op":"join","ch":"a","since":"5"})", msg);
  expect_bad_request(R"({"op":"join","ch":"a","since":null})", msg);
  expect_bad_request(R"({"op":"join","ch":"a","since":9223372036854775808})", msg);
}

TEST(DecodePub, RejectsBadIdAndMissingBody) {
  const std::string msg = "id must be a string of 1-64 chars";
  expect_bad_request(R"({"op":"pub","ch":"a","body":1,"rid":4})", "missing id", "4");
  expect_bad_request(R"({"op":"pub","ch":"a","id":"","body":1})", msg);
  expect_bad_request(R"({"op":"pub","ch":"a","id":7,"body":1})", msg);
  expect_bad_request(R"({"op":"pub","ch":"a","id":")" + std::string(65, 'i') + R"(","body":1})",
                     msg);
  expect_bad_request(R"({"op":"pub","ch":"a","id":"1"})", "missing body");
}

TEST(DecodePub, RejectsControlCharactersInIdAndKey) {
  expect_bad_request(R"({"op":"pub","ch":"a","id":"a\u0000b","body":1})",
                     "id must not contain control characters");
  expect_bad_request(R"({"op":"pub","ch":"a","id":"a\nb","body":1,"rid":2})",
                     "id must not contain control characters", "2");
  expect_bad_request(R"({"op":"state","ch":"a","key":"\u001f","body":1})",
                     "key must not contain control characters");
  EXPECT_EQ(decode_ok(R"({"op":"pub","ch":"a","id":"a b\u00e9","body":1})").id, "a b\xC3\xA9");
}

TEST(DecodeState, RejectsBadKeyAndMissingBody) {
  const std::string msg = "key must be a string of 1-64 chars";
  expect_bad_request(R"({"op":"state","ch":"a","body":1})", "missing key");
  expect_bad_request(R"({"op":"state","ch":"a","key":"","body":1})", msg);
  expect_bad_request(R"({"op":"state","ch":"a","key":["k"],"body":1})", msg);
  expect_bad_request(R"({"op":"state","ch":"a","key":")" + std::string(65, 'k') + R"(","body":1})",
                     msg);
  expect_bad_request(R"({"op":"state","ch":"a","key":"k"})", "missing body");
}

TEST(DecodeUp, RejectsMissingBody) {
  expect_bad_request(R"({"op":"up","ch":"a","rid":"u"})", "missing body", R"("u")");
}

TEST(DecodeHistory, NeedsExactlyOneOfAfterAndBefore) {
  const std::string msg = "history needs exactly one of after and before";
  expect_bad_request(R"({"op":"history","ch":"a"})", msg);
  expect_bad_request(R"({"op":"history","ch":"a","after":1,"before":5})", msg);
}

TEST(DecodeHistory, RejectsBadSeqsAndLimits) {
  expect_bad_request(R"({"op":"history","ch":"a","after":-1})",
                     "after must be a non-negative integer");
  expect_bad_request(R"({"op":"history","ch":"a","before":2.5})",
                     "before must be a non-negative integer");
  const std::string msg = "limit must be a positive integer";
  expect_bad_request(R"({"op":"history","ch":"a","after":1,"limit":0})", msg);
  expect_bad_request(R"({"op":"history","ch":"a","after":1,"limit":-5})", msg);
  expect_bad_request(R"({"op":"history","ch":"a","after":1,"limit":10.0})", msg);
  expect_bad_request(R"({"op":"history","ch":"a","after":1,"limit":"10"})", msg);
}

// --- too_large ---------------------------------------------------------------

std::string pub_with_body_of(size_t body_chars, std::string_view rid) {
  return R"({"op":"pub","rid":)" + std::string(rid) + R"(,"ch":"a","id":"1","body":")" +
         std::string(body_chars, 'b') + "\"}";
}

TEST(DecodeTooLarge, AcceptsAFrameOfExactlyTheLimit) {
  std::string frame = pub_with_body_of(0, "1");
  const DecodeLimits limits{.max_message_bytes = 100};
  frame = pub_with_body_of(100 - frame.size(), "1");
  ASSERT_EQ(frame.size(), 100u);
  decode_ok(frame, limits);
}

TEST(DecodeTooLarge, AnswersAFrameOverTheLimitWithItsRid) {
  const DecodeLimits limits{.max_message_bytes = 100};
  for (std::string_view rid : {"12", R"("r-7")"}) {
    const auto f = decode_fail(pub_with_body_of(200, rid), limits);
    EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
    EXPECT_EQ(f.error.msg, "frame exceeds max_message_bytes (100)");
    EXPECT_EQ(f.rid, rid);
  }
}

TEST(DecodeTooLarge, WinsOverOtherFaultsOfTheFrame) {
  const DecodeLimits limits{.max_message_bytes = 10};
  auto f = decode_fail(R"({"op":"join","rid":3,"ch":"bad name!"})", limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "3");
  f = decode_fail(R"({"op":"join","rid":3,"ch":"a",)", limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "");
  f = decode_fail(R"({"op":"ping","rid":1.5,"x":"......"})", limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "");
}

TEST(DecodeTooLarge, DoesNotParseFramesOverFourTimesTheLimit) {
  const DecodeLimits limits{.max_message_bytes = 100};
  EXPECT_EQ(hard_frame_limit(limits), 400u);
  const auto f = decode_fail(pub_with_body_of(400, "5"), limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "");
}

TEST(DecodeTooLarge, NeverEchoesTheBody) {
  const DecodeLimits limits{.max_message_bytes = 50};
  const auto f = decode_fail(pub_with_body_of(60, "1"), limits);
  EXPECT_EQ(f.error.msg.find("bbb"), std::string::npos);
}

}  // namespace
}  // namespace parley::protocol

// --- event streams (PROTOCOL.md "Event streams and leaderboards") ---------

namespace parley::protocol {
namespace {

TEST(DecodeHelloApiKey, ReadsTheApiKeyInsteadOfAToken) {
  const auto op = decode_ok(R"({"op":"hello","v":1,"api_key":"k1","rid":1})");
  EXPECT_EQ(op.kind, OpKind::kHello);
  EXPECT_EQ(op.api_key, "k1");
  EXPECT_TRUE(op.token.empty());
}

TEST(DecodeHelloApiKey, RejectsBothOrAnEmptyKey) {
  expect_bad_request(R"({"op":"hello","v":1,"api_key":"k","token":"t"})",
                     "hello takes token or api_key, not both");
  expect_bad_request(R"({"op":"hello","v":1,"api_key":""})", "api_key must not be empty");
  expect_bad_request(R"({"op":"hello","v":1,"api_key":5})", "api_key must be a string");
}

TEST(DecodeEmit, ReadsEventsInOrderWithBodiesAsWritten) {
  const auto op = decode_ok(
      R"({"op":"emit","rid":4,"topic":"hunt","events":[)"
      R"({"key":"player-9","type":"pick","body":{"item": 1.50 ,"s":"\u0041"},"id":"e-77"},)"
      R"( {"body":[1, 2],"type":"join","key":"p2"}]})");
  EXPECT_EQ(op.kind, OpKind::kEmit);
  EXPECT_EQ(op.topic, "hunt");
  ASSERT_EQ(op.events.size(), 2u);
  EXPECT_EQ(op.events[0].key, "player-9");
  EXPECT_EQ(op.events[0].type, "pick");
  EXPECT_EQ(op.events[0].id, "e-77");
  EXPECT_EQ(op.events[0].body, R"({"item":1.50,"s":"\u0041"})");
  EXPECT_EQ(op.events[1].key, "p2");
  EXPECT_EQ(op.events[1].id, "");
  EXPECT_EQ(op.events[1].body, "[1,2]");
}

TEST(DecodeEmit, AcceptsAThousandEventsAndNoMore) {
  std::string events;
  for (int i = 0; i < 1000; ++i) {
    events += (i ? "," : "");
    events += R"({"key":"k","type":"t","body":)" + std::to_string(i) + "}";
  }
  const auto op = decode_ok(R"({"op":"emit","topic":"t","events":[)" + events + "]}");
  ASSERT_EQ(op.events.size(), 1000u);
  EXPECT_EQ(op.events[999].body, "999");
  expect_bad_request(R"({"op":"emit","topic":"t","events":[)" + events +
                         R"(,{"key":"k","type":"t","body":1}]})",
                     "events must hold 1-1000 events");
  expect_bad_request(R"({"op":"emit","topic":"t","events":[]})", "events must hold 1-1000 events");
}

TEST(DecodeEmit, OneBadEventFailsTheWholeEmitAndNamesIt) {
  const std::string ok = R"({"key":"k","type":"t","body":1})";
  auto emit = [&](std::string_view bad) {
    return R"({"op":"emit","rid":"r","topic":"t","events":[)" + ok + "," + std::string(bad) + "]}";
  };
  expect_bad_request(emit(R"({"type":"t","body":1})"), "events[1]: missing key", R"("r")");
  expect_bad_request(emit(R"({"key":"","type":"t","body":1})"),
                     "events[1]: key must be a string of 1-128 chars", R"("r")");
  expect_bad_request(emit(R"({"key":"k","type":7,"body":1})"),
                     "events[1]: type must be a string of 1-128 chars", R"("r")");
  expect_bad_request(emit(R"({"key":"k","type":")" + std::string(129, 't') + R"(","body":1})"),
                     "events[1]: type must be a string of 1-128 chars", R"("r")");
  expect_bad_request(emit(R"({"key":"k","type":"t"})"), "events[1]: missing body", R"("r")");
  expect_bad_request(emit(R"({"key":"k","type":"t","body":1,"id":""})"),
                     "events[1]: id must be a string of 1-64 chars", R"("r")");
  expect_bad_request(emit(R"({"key":"k\u0000","type":"t","body":1})"),
                     "events[1]: key must not contain control characters", R"("r")");
  expect_bad_request(emit(R"({"key":"k","key":"j","type":"t","body":1})"),
                     "events[1]: duplicate field key", R"("r")");
  expect_bad_request(emit("5"), "events[1]: an event must be an object", R"("r")");
  expect_bad_request(R"({"op":"emit","topic":"t","events":{}})", "events must be an array");
  expect_bad_request(R"({"op":"emit","topic":"t"})", "missing events");
}

TEST(DecodeEmit, ChecksTheTopicName) {
  expect_bad_request(R"({"op":"emit","events":[{"key":"k","type":"t","body":1}]})", "missing topic");
  expect_bad_request(R"({"op":"emit","topic":"a b","events":[{"key":"k","type":"t","body":1}]})",
                     "bad topic name");
  expect_bad_request(R"({"op":"emit","topic":3,"events":[{"key":"k","type":"t","body":1}]})",
                     "topic must be a string");
}

TEST(DecodeEmit, AnEventBodyOverTheLimitIsTooLarge) {
  DecodeLimits limits;
  limits.max_message_bytes = 64;
  const std::string frame = R"({"op":"emit","rid":1,"topic":"t","events":[{"key":"k","type":"t","body":")" +
                            std::string(80, 'x') + R"("}]})";
  const auto f = decode_fail(frame, limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "1");
}

TEST(DecodeTail, DefaultsToLatestOnEveryPartition) {
  const auto op = decode_ok(R"({"op":"tail","topic":"hunt"})");
  EXPECT_EQ(op.kind, OpKind::kTail);
  EXPECT_EQ(op.from, TailFrom::kLatest);
  EXPECT_FALSE(op.p.has_value());
}

TEST(DecodeTail, ReadsPartitionAndEachFormOfFrom) {
  auto op = decode_ok(R"({"op":"tail","topic":"hunt","p":3,"from":41})");
  EXPECT_EQ(op.p, 3u);
  EXPECT_EQ(op.from, TailFrom::kOffset);
  EXPECT_EQ(op.from_off, 41u);
  EXPECT_EQ(decode_ok(R"({"op":"tail","topic":"h","from":"earliest"})").from, TailFrom::kEarliest);
  EXPECT_EQ(decode_ok(R"({"op":"tail","topic":"h","from":"latest"})").from, TailFrom::kLatest);
  EXPECT_EQ(decode_ok(R"({"op":"tail","topic":"h","from":0})").from_off, 0u);
}

TEST(DecodeTail, RejectsBadPartitionAndFrom) {
  const std::string from_msg = R"(from must be an offset, "earliest" or "latest")";
  expect_bad_request(R"({"op":"tail","topic":"h","from":"first"})", from_msg);
  expect_bad_request(R"({"op":"tail","topic":"h","from":-1})", from_msg);
  expect_bad_request(R"({"op":"tail","topic":"h","from":1.5})", from_msg);
  expect_bad_request(R"({"op":"tail","topic":"h","p":-1})", "p must be a non-negative integer");
  expect_bad_request(R"({"op":"tail","topic":"h","p":"1"})", "p must be a non-negative integer");
  expect_bad_request(R"({"op":"tail","topic":"h","p":4294967296})", "p must be a non-negative integer");
}

TEST(DecodeConsume, ReadsTopicAndGroup) {
  const auto op = decode_ok(R"({"op":"consume","topic":"hunt","group":"scorers","rid":2})");
  EXPECT_EQ(op.kind, OpKind::kConsume);
  EXPECT_EQ(op.group, "scorers");
  expect_bad_request(R"({"op":"consume","topic":"hunt"})", "missing group");
  expect_bad_request(R"({"op":"consume","topic":"hunt","group":""})",
                     "group must be a string of 1-64 chars");
  expect_bad_request(R"({"op":"consume","topic":"hunt","group":")" + std::string(65, 'g') + "\"}",
                     "group must be a string of 1-64 chars");
}

TEST(DecodeCommit, ReadsEveryField) {
  const auto op = decode_ok(R"({"op":"commit","topic":"hunt","group":"g","gen":3,"p":0,"off":41})");
  EXPECT_EQ(op.kind, OpKind::kCommit);
  EXPECT_EQ(op.gen, 3u);
  EXPECT_EQ(op.p, 0u);
  EXPECT_EQ(op.off, 41u);
}

TEST(DecodeCommit, EveryFieldIsRequiredAndTyped) {
  expect_bad_request(R"({"op":"commit","topic":"h","group":"g","p":0,"off":1})", "missing gen");
  expect_bad_request(R"({"op":"commit","topic":"h","group":"g","gen":1,"off":1})", "missing p");
  expect_bad_request(R"({"op":"commit","topic":"h","group":"g","gen":1,"p":0})", "missing off");
  expect_bad_request(R"({"op":"commit","topic":"h","group":"g","gen":1,"p":0,"off":-2})",
                     "off must be a non-negative integer");
  expect_bad_request(R"({"op":"commit","topic":"h","group":"g","gen":"1","p":0,"off":2})",
                     "gen must be a non-negative integer");
}

TEST(DecodeRank, ReadsBoardMemberAroundAndRound) {
  auto op = decode_ok(R"({"op":"rank","board":"hunt","member":"p7","around":2,"round":"r12"})");
  EXPECT_EQ(op.kind, OpKind::kRank);
  EXPECT_EQ(op.board, "hunt");
  EXPECT_EQ(op.member, "p7");
  EXPECT_EQ(op.around, 2u);
  EXPECT_EQ(op.round, "r12");
  op = decode_ok(R"({"op":"rank","board":"hunt","member":"p7","round":12})");
  EXPECT_EQ(op.around, 5u);
  EXPECT_EQ(op.round, "12");
  EXPECT_EQ(decode_ok(R"({"op":"rank","board":"b","member":"m","around":100000})").around, 100u);
  EXPECT_FALSE(decode_ok(R"({"op":"rank","board":"b","member":"m"})").round.has_value());
}

TEST(DecodeRank, RejectsBadFields) {
  expect_bad_request(R"({"op":"rank","member":"m"})", "missing board");
  expect_bad_request(R"({"op":"rank","board":"b"})", "missing member");
  expect_bad_request(R"({"op":"rank","board":"b","member":"m","around":-1})",
                     "around must be a non-negative integer");
  expect_bad_request(R"({"op":"rank","board":"b","member":"m","round":1.5})",
                     "round must be a string of 1-128 chars or an integer");
  expect_bad_request(R"({"op":"rank","board":"b","member":"m","round":""})",
                     "round must be a string of 1-128 chars or an integer");
}

TEST(DecodeLeaveTopic, ReadsTopicAndOptionalGroup) {
  auto op = decode_ok(R"({"op":"leave","topic":"hunt"})");
  EXPECT_EQ(op.kind, OpKind::kLeave);
  EXPECT_EQ(op.topic, "hunt");
  EXPECT_TRUE(op.ch.empty());
  EXPECT_TRUE(op.group.empty());
  op = decode_ok(R"({"op":"leave","topic":"hunt","group":"g"})");
  EXPECT_EQ(op.group, "g");
  expect_bad_request(R"({"op":"leave","topic":"hunt","ch":"c"})", "leave takes ch or topic, not both");
}

TEST(DecodeState, ReadsAnOptionalPositionOfTwoOrThreeNumbers) {
  EXPECT_FALSE(decode_ok(R"({"op":"state","ch":"w:1","key":"k","body":1})").pos.has_value());
  const auto p2 = decode_ok(R"({"op":"state","ch":"w:1","key":"k","pos":[1.5,-2],"body":1})").pos;
  ASSERT_TRUE(p2.has_value());
  EXPECT_EQ(p2->dims, 2);
  EXPECT_EQ(p2->v[0], 1.5);
  EXPECT_EQ(p2->v[1], -2);
  EXPECT_EQ(p2->v[2], 0);
  const auto p3 = decode_ok(R"({"op":"state","ch":"w:1","key":"k","pos":[0,1e15,-1e15],"body":1})").pos;
  ASSERT_TRUE(p3.has_value());
  EXPECT_EQ(p3->dims, 3);
  EXPECT_EQ(p3->v[2], -1e15);
}

TEST(DecodeState, RejectsAPositionThatIsNotTwoOrThreeFiniteNumbers) {
  const std::string msg = "pos must be an array of 2 or 3 finite numbers";
  for (const char* pos : {"[1]", "[]", "[1,2,3,4]", R"(["1",2])", "[1,null]", "{}", "1",
                          "[1.1e15,0]", "[0,0,-2e15]", "[[1],2]"}) {
    expect_bad_request(std::string(R"({"op":"state","ch":"a","key":"k","pos":)") + pos + R"(,"body":1})",
                       msg);
  }
}

TEST(DecodeApiBatch, IsABatchWhenTheFirstNonBlankByteIsABracket) {
  EXPECT_TRUE(is_api_batch("[]"));
  EXPECT_TRUE(is_api_batch(" \r\n\t[{}]"));
  EXPECT_FALSE(is_api_batch(R"({"ch":"a","body":[1]})"));
  EXPECT_FALSE(is_api_batch(""));
  EXPECT_FALSE(is_api_batch("   "));
}

TEST(DecodeApiBatch, DecodesEachElementAsASingleBodyKeepingBodiesAsWritten) {
  DecodeLimits limits;
  auto r = decode_api_post_batch(R"( [ {"ch":"w:1","body": 1.50 ,"id":"a"} , {"ch":"w:2","body":{"s":"\u00e9"}} ] )",
                                 ApiPostKind::kPublish, limits);
  auto* posts = std::get_if<std::vector<ApiPost>>(&r);
  ASSERT_NE(posts, nullptr);
  ASSERT_EQ(posts->size(), 2u);
  EXPECT_EQ((*posts)[0].ch, "w:1");
  EXPECT_EQ((*posts)[0].id, "a");
  EXPECT_EQ((*posts)[0].body, "1.50");
  EXPECT_EQ((*posts)[1].ch, "w:2");
  EXPECT_EQ((*posts)[1].body, R"({"s":"\u00e9"})");
  auto s = decode_api_post_batch(R"([{"user":"u1","body":1},{"conn":"c1f","body":2}])", ApiPostKind::kSend, limits);
  auto* sends = std::get_if<std::vector<ApiPost>>(&s);
  ASSERT_NE(sends, nullptr);
  EXPECT_EQ((*sends)[0].user, "u1");
  EXPECT_EQ((*sends)[1].conn, "c1f");
}

TEST(DecodeApiBatch, OneBadElementFailsTheBatchAndIsNamed) {
  DecodeLimits limits;
  limits.max_message_bytes = 64;
  auto error_of = [&](const std::string& json) {
    auto r = decode_api_post_batch(json, ApiPostKind::kPublish, limits);
    auto* e = std::get_if<Error>(&r);
    return e ? std::string(wire_name(e->code)) + ": " + e->msg : std::string("accepted");
  };
  EXPECT_EQ(error_of(R"([{"ch":"a","body":1},{"ch":"a"}])"), "bad_request: [1]: missing body");
  EXPECT_EQ(error_of(R"([{"ch":"a","body":1},{"ch":"a","body":1,"body":2}])"),
            "bad_request: [1]: duplicate field body");
  EXPECT_EQ(error_of("[]").substr(0, 11), "bad_request");
  EXPECT_EQ(error_of("[1]").substr(0, 11), "bad_request");
  EXPECT_EQ(error_of("{").substr(0, 11), "bad_request");
  // Each element within max_message_bytes; the whole within 4x.
  const std::string big_body(80, 'x');
  EXPECT_EQ(error_of(R"([{"ch":"a","body":")" + big_body + R"("}])").substr(0, 13), "too_large: [0");
  std::string many = "[";
  for (int i = 0; i < 20; ++i) many += std::string(i ? "," : "") + R"({"ch":"a","body":1})";
  EXPECT_EQ(error_of(many + "]").substr(0, 9), "too_large");
}

}  // namespace
}  // namespace parley::protocol

namespace parley::protocol {
namespace {

// PROTOCOL.md "State deltas": hello's caps, unknown names ignored.
TEST(DecodeHello, CapsNameTheCapabilitiesAClientAsksFor) {
  EXPECT_FALSE(decode_ok(R"({"op":"hello","v":1,"token":"t"})").cap_state_delta);
  EXPECT_TRUE(decode_ok(R"({"op":"hello","v":1,"token":"t","caps":["later","state_delta"]})").cap_state_delta);
  EXPECT_FALSE(decode_ok(R"({"op":"hello","v":1,"token":"t","caps":[]})").cap_state_delta);
  expect_bad_request(R"({"op":"hello","v":1,"token":"t","caps":"state_delta"})", "caps must be an array of strings");
  expect_bad_request(R"({"op":"hello","v":1,"token":"t","caps":["state_delta",1]})", "caps must be an array of strings");
  std::string out;
  encode_welcome(out, "1", "c1", "u", "demo", 25000, false, true);
  EXPECT_EQ(out, R"({"op":"welcome","rid":1,"conn":"c1","user":"u","tenant":"demo","heartbeat_ms":25000,"caps":["state_delta"]})");
}

// PROTOCOL.md "Batched state deltas": a second capability; the welcome lists
// both when both are granted.
TEST(DecodeHello, StateDeltaBatchIsACapabilityOfItsOwn) {
  const auto both = decode_ok(R"({"op":"hello","v":1,"token":"t","caps":["state_delta_batch","state_delta"]})");
  EXPECT_TRUE(both.cap_state_delta);
  EXPECT_TRUE(both.cap_state_delta_batch);
  const auto alone = decode_ok(R"({"op":"hello","v":1,"token":"t","caps":["state_delta_batch"]})");
  EXPECT_FALSE(alone.cap_state_delta);
  EXPECT_TRUE(alone.cap_state_delta_batch);
  EXPECT_FALSE(decode_ok(R"({"op":"hello","v":1,"token":"t","caps":["state_delta"]})").cap_state_delta_batch);
  expect_bad_request(R"({"op":"hello","v":1,"token":"t","caps":["state_delta_batch",null]})",
                     "caps must be an array of strings");
  std::string out;
  encode_welcome(out, "1", "c1", "u", "demo", 25000, false, true, true);
  EXPECT_EQ(out, R"({"op":"welcome","rid":1,"conn":"c1","user":"u","tenant":"demo","heartbeat_ms":25000,"caps":["state_delta","state_delta_batch"]})");
}

}  // namespace
}  // namespace parley::protocol
