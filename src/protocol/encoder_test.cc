#include "protocol/encoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace parley::protocol {
namespace {

TEST(EncodeMsg, WritesFieldsInProtocolOrder) {
  std::string out;
  encode_msg(out, {.ch = "chat:lobby", .seq = 57, .from = "u1", .id = "c-81",
                   .ts_ms = 1764460800123, .body = R"({"t":"hi"})"});
  EXPECT_EQ(out,
            R"({"op":"msg","ch":"chat:lobby","seq":57,"from":"u1","id":"c-81",)"
            R"("ts":1764460800123,"body":{"t":"hi"}})");
}

TEST(EncodeMsg, WritesEditsDeletesAndCurrentVersionsAsPROTOCOLmdModerationSays) {
  std::string out;
  encode_msg(out, {.ch = "c", .seq = 60, .from = "u1", .ts_ms = 9, .body = R"({"t":1})",
                   .kind = EntryKind::kEdit, .target = 57});
  EXPECT_EQ(out, R"({"op":"edit","ch":"c","seq":60,"target":57,"from":"u1","ts":9,"body":{"t":1}})");
  out.clear();
  encode_msg(out, {.ch = "c", .seq = 61, .from = "m", .ts_ms = 9, .body = "null",
                   .kind = EntryKind::kDelete, .target = 58});
  EXPECT_EQ(out, R"({"op":"delete","ch":"c","seq":61,"target":58,"from":"m","ts":9})");
  out.clear();
  encode_msg(out, {.ch = "c", .seq = 57, .from = "u1", .id = "a", .ts_ms = 5, .body = "2",
                   .edited_ms = 9});
  EXPECT_EQ(out, R"({"op":"msg","ch":"c","seq":57,"from":"u1","id":"a","ts":5,"edited":9,"body":2})");
  out.clear();
  encode_msg(out, {.ch = "c", .seq = 58, .from = "u1", .id = "b", .ts_ms = 5, .body = "null",
                   .deleted = true});
  EXPECT_EQ(out, R"({"op":"msg","ch":"c","seq":58,"from":"u1","id":"b","ts":5,"deleted":true})");
  out.clear();
  encode_moderated(out, "7", true, "c", 57, 60);
  EXPECT_EQ(out, R"({"op":"edited","rid":7,"ch":"c","target":57,"seq":60})");
}

TEST(EncodeMsg, EscapesStringsButNotTheBody) {
  std::string out;
  encode_msg(out, {.ch = "a", .seq = 1, .from = "u\"1", .id = "x\ny", .ts_ms = 0,
                   .body = R"("q\"")"});
  EXPECT_EQ(out,
            R"({"op":"msg","ch":"a","seq":1,"from":"u\"1","id":"x\ny","ts":0,"body":"q\""})");
}

TEST(EncodeMsg, WritesTheLargestSeq) {
  std::string out;
  encode_msg(out, {.ch = "a", .seq = 18446744073709551615u, .from = "f", .id = "i", .ts_ms = 1,
                   .body = "1"});
  EXPECT_NE(out.find(R"("seq":18446744073709551615,)"), std::string::npos);
}

TEST(Encode, AppendsToWhatIsAlreadyThere) {
  std::string out = "[";
  encode_pong(out, "1", 1764460800123);
  out += ',';
  encode_pong(out, "", 5);
  out += ']';
  EXPECT_EQ(out, R"([{"op":"pong","rid":1,"ts":1764460800123},{"op":"pong","ts":5}])");
}

TEST(EncodeState, WritesChFromKeyBody) {
  std::string out;
  encode_state(out, "world:7", "u1", "pos", R"({"x":1})");
  EXPECT_EQ(out, R"({"op":"state","ch":"world:7","from":"u1","key":"pos","body":{"x":1}})");
}

TEST(EncodePresence, WritesBothLists) {
  const std::vector<std::string> join{"u2"}, leave{"u3", "u4"};
  std::string out;
  encode_presence(out, "world:7", join, leave);
  EXPECT_EQ(out, R"({"op":"presence","ch":"world:7","join":["u2"],"leave":["u3","u4"]})");
}

TEST(EncodePresence, OmitsEmptyLists) {
  const std::vector<std::string> some{"u2"}, none;
  std::string out;
  encode_presence(out, "w", some, none);
  EXPECT_EQ(out, R"({"op":"presence","ch":"w","join":["u2"]})");
  out.clear();
  encode_presence(out, "w", none, some);
  EXPECT_EQ(out, R"({"op":"presence","ch":"w","leave":["u2"]})");
}

TEST(EncodeDirect, ComesFromServer) {
  std::string out;
  encode_direct(out, R"({"gift":3})");
  EXPECT_EQ(out, R"({"op":"direct","from":"server","body":{"gift":3}})");
}

TEST(EncodeWelcome, WritesConnUserTenantHeartbeat) {
  std::string out;
  encode_welcome(out, "1", "c81", "u1", "demo", 25000);
  EXPECT_EQ(out, R"({"op":"welcome","rid":1,"conn":"c81","user":"u1","tenant":"demo",)"
                 R"("heartbeat_ms":25000})");
}

TEST(EncodeJoined, WritesMembersOnlyWithPresence) {
  std::string out;
  encode_joined(out, R"("j")", "chat:lobby", 57, true, nullptr);
  EXPECT_EQ(out, R"({"op":"joined","rid":"j","ch":"chat:lobby","seq":57,"recovered":true})");

  const std::vector<std::string> members{"u1", "u2"};
  const std::span<const std::string> span(members);
  out.clear();
  encode_joined(out, "", "w", 0, false, &span);
  EXPECT_EQ(out, R"({"op":"joined","ch":"w","seq":0,"recovered":false,"members":["u1","u2"]})");

  const std::span<const std::string> empty;
  out.clear();
  encode_joined(out, "2", "w", 3, false, &empty);
  EXPECT_EQ(out, R"({"op":"joined","rid":2,"ch":"w","seq":3,"recovered":false,"members":[]})");
}

TEST(EncodeJoined, WritesTheEpochOnlyAboveOne) {
  std::string out;
  encode_joined(out, "1", "chat:a", 9, false, nullptr, 1);
  EXPECT_EQ(out, R"({"op":"joined","rid":1,"ch":"chat:a","seq":9,"recovered":false})");
  out.clear();
  encode_joined(out, "1", "chat:a", 65546, false, nullptr, 2);
  EXPECT_EQ(out,
            R"({"op":"joined","rid":1,"ch":"chat:a","seq":65546,"recovered":false,"epoch":2})");
}

TEST(EncodeLeft, WritesRidAndCh) {
  std::string out;
  encode_left(out, "4", "a");
  EXPECT_EQ(out, R"({"op":"left","rid":4,"ch":"a"})");
}

TEST(EncodeAck, WritesFieldsInProtocolOrder) {
  std::string out;
  encode_ack(out, "3", "chat:lobby", "c-81", 57, false);
  EXPECT_EQ(out, R"({"op":"ack","rid":3,"ch":"chat:lobby","id":"c-81","seq":57,"dup":false})");
  out.clear();
  encode_ack(out, "", "a", "i", 1, true);
  EXPECT_EQ(out, R"({"op":"ack","ch":"a","id":"i","seq":1,"dup":true})");
}

TEST(EncodeAck, EscapesTheChannelAndIdButNotTheRid) {
  std::string out;
  encode_ack(out, R"("r\"1")", "a\"b", "x\\y\n", 18446744073709551615u, false);
  EXPECT_EQ(out,
            R"({"op":"ack","rid":"r\"1","ch":"a\"b","id":"x\\y\n",)"
            R"("seq":18446744073709551615,"dup":false})");
}

TEST(EncodeHistory, WrapsTheEncodedMsgs) {
  std::string msgs;
  encode_msg(msgs, {.ch = "a", .seq = 1, .from = "u", .id = "1", .ts_ms = 5, .body = "1"});
  msgs += ',';
  encode_msg(msgs, {.ch = "a", .seq = 2, .from = "u", .id = "2", .ts_ms = 6, .body = "2"});
  std::string out;
  encode_history(out, "8", "a", msgs);
  EXPECT_EQ(out, R"({"op":"history","rid":8,"ch":"a","msgs":[)" + msgs + "]}");
  out.clear();
  encode_history(out, "", "a", "");
  EXPECT_EQ(out, R"({"op":"history","ch":"a","msgs":[]})");
}

TEST(EncodeError, WritesRetryOnlyWhenPositive) {
  std::string out;
  encode_error(out, "3", Error{ErrorCode::kRateLimited, "slow down", 200});
  EXPECT_EQ(out,
            R"({"op":"error","rid":3,"code":"rate_limited","msg":"slow down","retry_ms":200})");
  out.clear();
  encode_error(out, "", Error{ErrorCode::kBadRequest, "bad channel name"});
  EXPECT_EQ(out, R"({"op":"error","code":"bad_request","msg":"bad channel name"})");
}

TEST(EncodeError, EscapesTheMessage) {
  std::string out;
  encode_error(out, "", Error{ErrorCode::kInternal, "a \"b\""});
  EXPECT_EQ(out, R"({"op":"error","code":"internal","msg":"a \"b\""})");
}

TEST(EncodeBye, WritesReconnectOnlyWhenPositive) {
  std::string out;
  encode_bye(out, "draining", 500);
  EXPECT_EQ(out, R"({"op":"bye","code":"draining","reconnect_ms":500})");
  out.clear();
  encode_bye(out, "slow_consumer", 0);
  EXPECT_EQ(out, R"({"op":"bye","code":"slow_consumer"})");
}

}  // namespace
}  // namespace parley::protocol

namespace parley::protocol {
namespace {

TEST(EncodeEvents, OutOfRangeCarriesPartitionAndBounds) {
  std::string out;
  encode_out_of_range(out, "7", "offset below retention", OffsetRange{3, 41, 100});
  EXPECT_EQ(out, R"({"op":"error","rid":7,"code":"out_of_range","msg":"offset below retention",)"
                 R"("p":3,"earliest":41,"latest":100})");
}

TEST(EncodeEvents, LeftTopicNamesTheGroupOnlyWhenGiven) {
  std::string out;
  encode_left_topic(out, "1", "hunt", "");
  EXPECT_EQ(out, R"({"op":"left","rid":1,"topic":"hunt"})");
  out.clear();
  encode_left_topic(out, "", "hunt", "g");
  EXPECT_EQ(out, R"({"op":"left","topic":"hunt","group":"g"})");
}

}  // namespace
}  // namespace parley::protocol
