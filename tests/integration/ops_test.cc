// The client ops of PROTOCOL.md ("Client ops"): join, leave, history, ping,
// rid echo, and `up` without an upstream.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/clock.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

// A string array field as a sorted list (member lists have no order).
std::vector<std::string> sorted_strings(const std::string& obj, const char* key) {
  std::vector<std::string> out;
  auto raw = json_raw(obj, key);
  if (!raw) return out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(*raw).get(doc)) return out;
  for (auto e : doc.get_array()) {
    std::string_view s;
    if (!e.get_string().get(s)) out.emplace_back(s);
  }
  std::sort(out.begin(), out.end());
  return out;
}

constexpr int kBigLogSize = 1100;  // more than the history cap of 1000

class OpsTest : public SharedServerTest<OpsTest> {
 public:
  static ServerSpec server_spec() {
    // Unlimited per-connection rate so a test can fill a long log quickly;
    // `log` keeps more history than one request may return.
    return spec_with_tenants(default_tenants_toml(
        "publish_per_conn_sec = 0\n"
        "[tenants.demo.namespaces.quiet]\npresence = false\n"
        "[tenants.demo.namespaces.log]\ndurable = false\nhistory = 2000\n"));
  }

 protected:
  // Publishes `n` messages (ids m1..mn) without waiting in between, then
  // waits for every ack. The client must have joined `ch`.
  static void publish_many(Client& c, const std::string& ch, int n) {
    for (int i = 1; i <= n; ++i) c.send(pub_frame(ch, "m" + std::to_string(i), std::to_string(i)));
    for (int i = 1; i <= n; ++i) ASSERT_FALSE(c.expect("ack").empty()) << "ack " << i;
  }
};

// ---- join ----

TEST_F(OpsTest, JoinedCarriesTheChannelsLatestSeq) {
  auto a = connect_as("alice");
  a->join("chat:latest");
  publish_many(*a, "chat:latest", 2);
  auto b = connect_as("bob");
  b->send(R"({"op":"join","ch":"chat:latest","rid":9})");
  auto j = b->expect("joined");
  EXPECT_EQ(json_int(j, "rid"), 9) << j;
  EXPECT_EQ(json_str(j, "ch"), "chat:latest");
  EXPECT_EQ(json_int(j, "seq"), 2);
  EXPECT_EQ(json_bool(j, "recovered"), false);
}

TEST_F(OpsTest, JoinedOfAnEmptyChannelHasSeqZero) {
  auto a = connect_as("alice");
  auto j = a->join("chat:empty");
  EXPECT_EQ(json_int(j, "seq"), 0) << j;
}

TEST_F(OpsTest, JoinedListsMembersWhereTheNamespaceHasPresence) {
  auto a = connect_as("alice");
  auto ja = a->join("world:members");
  EXPECT_EQ(sorted_strings(ja, "members"), (std::vector<std::string>{"alice"})) << ja;
  auto b = connect_as("bob");
  auto jb = b->join("world:members");
  EXPECT_EQ(sorted_strings(jb, "members"), (std::vector<std::string>{"alice", "bob"})) << jb;
}

TEST_F(OpsTest, JoinedHasNoMembersWhereTheNamespaceHasNoPresence) {
  auto a = connect_as("alice");
  auto j = a->join("quiet:members");
  EXPECT_EQ(op_of(j), "joined") << j;
  EXPECT_FALSE(json_raw(j, "members").has_value()) << j;
}

TEST_F(OpsTest, JoinWithSinceReplaysNewerMessagesBeforeAnythingLive) {
  auto a = connect_as("alice");
  a->join("chat:since");
  publish_many(*a, "chat:since", 3);
  auto b = connect_as("bob");
  auto j = b->join("chat:since", 1);
  EXPECT_EQ(json_int(j, "seq"), 3) << j;
  EXPECT_EQ(json_bool(j, "recovered"), true);
  for (int64_t seq : {2, 3}) {
    auto m = b->next();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(op_of(*m), "msg") << *m;
    EXPECT_EQ(json_int(*m, "seq"), seq) << *m;
  }
}

TEST_F(OpsTest, JoinWithSinceAboveTheLatestSeqIsNotRecovered) {
  auto a = connect_as("alice");
  a->join("chat:ahead");
  publish_many(*a, "chat:ahead", 1);
  auto b = connect_as("bob");
  auto j = b->join("chat:ahead", 10);
  EXPECT_EQ(json_int(j, "seq"), 1) << j;
  EXPECT_EQ(json_bool(j, "recovered"), false);
}

// ---- leave ----

TEST_F(OpsTest, LeaveIsAnsweredWithLeft) {
  auto a = connect_as("alice");
  a->join("chat:leave");
  a->send(R"({"op":"leave","ch":"chat:leave","rid":4})");
  auto l = a->expect("left");
  EXPECT_EQ(l, R"({"op":"left","rid":4,"ch":"chat:leave"})");
}

TEST_F(OpsTest, LeaveOfAChannelNotJoinedIsAnsweredWithLeft) {
  auto a = connect_as("alice");
  a->send(R"({"op":"leave","ch":"chat:never-joined","rid":"x"})");
  auto l = a->next();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(*l, R"({"op":"left","rid":"x","ch":"chat:never-joined"})");
}

TEST_F(OpsTest, PublishAfterLeaveIsForbidden) {
  auto a = connect_as("alice");
  a->join("chat:left-pub");
  a->send(R"({"op":"leave","ch":"chat:left-pub"})");
  ASSERT_FALSE(a->expect("left").empty());
  a->send(R"({"op":"pub","ch":"chat:left-pub","id":"m1","body":1,"rid":2})");
  auto e = a->expect("error");
  EXPECT_EQ(json_str(e, "code"), "forbidden") << e;
  EXPECT_EQ(json_int(e, "rid"), 2);
}

// ---- history ----

class HistoryTest : public OpsTest {
 protected:
  static void SetUpTestSuite() {
    OpsTest::SetUpTestSuite();
    auto c = connect_as("writer");
    c->join("log:big");
    publish_many(*c, "log:big", kBigLogSize);
  }

  // A history request from a client that has not joined the channel.
  static std::string history(const std::string& fields) {
    auto c = connect_as("reader");
    c->send(R"({"op":"history","ch":"log:big","rid":"h",)" + fields + "}");
    return c->expect("history");
  }
};

TEST_F(HistoryTest, AfterReturnsTheFirst50OldestFirstByDefault) {
  auto h = history(R"("after":0)");
  EXPECT_EQ(json_str(h, "rid"), "h") << h.substr(0, 200);
  EXPECT_EQ(json_str(h, "ch"), "log:big");
  EXPECT_EQ(msg_seqs(h), seq_range(1, 50));
}

TEST_F(HistoryTest, AfterHonoursLimit) {
  EXPECT_EQ(msg_seqs(history(R"("after":10,"limit":3)")), seq_range(11, 13));
}

TEST_F(HistoryTest, AfterNearTheEndReturnsWhatThereIs) {
  EXPECT_EQ(msg_seqs(history(R"("after":1098)")), seq_range(1099, 1100));
}

TEST_F(HistoryTest, BeforeReturnsTheNewestBelowItOldestFirst) {
  EXPECT_EQ(msg_seqs(history(R"("before":1101,"limit":3)")), seq_range(1098, 1100));
}

TEST_F(HistoryTest, BeforeUsesTheDefaultLimitOf50) {
  EXPECT_EQ(msg_seqs(history(R"("before":101)")), seq_range(51, 100));
}

TEST_F(HistoryTest, LimitIsCappedAt1000) {
  EXPECT_EQ(msg_seqs(history(R"("after":0,"limit":5000)")), seq_range(1, 1000));
}

TEST_F(HistoryTest, MessagesCarryTheirFields) {
  auto h = history(R"("after":41,"limit":1)");
  auto raw = json_raw(h, "msgs");
  ASSERT_TRUE(raw.has_value()) << h;
  const std::string m = raw->substr(1, raw->size() - 2);
  EXPECT_EQ(op_of(m), "msg") << m;
  EXPECT_EQ(json_str(m, "ch"), "log:big");
  EXPECT_EQ(json_int(m, "seq"), 42);
  EXPECT_EQ(json_str(m, "from"), "writer");
  EXPECT_EQ(json_str(m, "id"), "m42");
  EXPECT_EQ(json_raw(m, "body"), "42");
  EXPECT_TRUE(json_int(m, "ts").has_value());
}

TEST_F(HistoryTest, OfAnEmptyChannelIsEmpty) {
  auto c = connect_as("reader");
  c->send(R"({"op":"history","ch":"log:nothing","after":0,"rid":1})");
  EXPECT_EQ(c->expect("history"), R"({"op":"history","rid":1,"ch":"log:nothing","msgs":[]})");
}

// ---- ping, rid ----

TEST_F(OpsTest, PingIsAnsweredWithPong) {
  auto a = connect_as("alice");
  const int64_t before = wall_ms();
  a->send(R"({"op":"ping","rid":5})");
  auto p = a->next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(op_of(*p), "pong") << *p;
  EXPECT_EQ(json_int(*p, "rid"), 5) << *p;
  // PROTOCOL.md "Time for games": the server's time when it answered.
  const auto ts = json_int(*p, "ts");
  ASSERT_TRUE(ts.has_value()) << *p;
  EXPECT_GE(*ts, before) << *p;
  EXPECT_LE(*ts, wall_ms()) << *p;
}

TEST_F(OpsTest, PingWithoutRidIsAnsweredWithPongWithoutRid) {
  auto a = connect_as("alice");
  a->send(R"({"op":"ping"})");
  auto p = a->next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(op_of(*p), "pong") << *p;
  EXPECT_FALSE(json_raw(*p, "rid").has_value()) << *p;
  EXPECT_TRUE(json_int(*p, "ts").has_value()) << *p;
}

TEST_F(OpsTest, IntegerRidIsEchoedAsAnInteger) {
  auto a = connect_as("alice");
  a->send(R"({"op":"join","ch":"chat:rid-int","rid":123456789012})");
  auto j = a->expect("joined");
  EXPECT_EQ(json_int(j, "rid"), 123456789012) << j;
  a->send(R"({"op":"pub","ch":"chat:rid-int","id":"m1","body":1,"rid":-7})");
  auto ack = a->expect("ack");
  EXPECT_EQ(json_int(ack, "rid"), -7) << ack;
}

TEST_F(OpsTest, StringRidIsEchoedAsAString) {
  auto a = connect_as("alice");
  a->send(R"({"op":"join","ch":"chat:rid-str","rid":"j-1"})");
  auto j = a->expect("joined");
  EXPECT_EQ(json_str(j, "rid"), "j-1") << j;
  a->send(R"({"op":"pub","ch":"chat:rid-str","id":"m1","body":1,"rid":"7"})");
  auto ack = a->expect("ack");
  EXPECT_EQ(json_str(ack, "rid"), "7") << ack;
  EXPECT_FALSE(json_int(ack, "rid").has_value()) << "a string rid stays a string";
}

TEST_F(OpsTest, AckCarriesChannelIdSeqAndDup) {
  auto a = connect_as("alice");
  a->join("chat:ack");
  a->send(R"({"op":"pub","ch":"chat:ack","id":"c-81","body":{},"rid":3})");
  EXPECT_EQ(a->expect("ack"), R"({"op":"ack","rid":3,"ch":"chat:ack","id":"c-81","seq":1,"dup":false})");
}

// ---- up ----

TEST_F(OpsTest, UpWithoutAnUpstreamIsBadRequest) {
  auto a = connect_as("alice");
  a->join("chat:up");
  a->send(R"({"op":"up","ch":"chat:up","body":{"move":1},"rid":8})");
  auto e = a->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(op_of(*e), "error") << *e;
  EXPECT_EQ(json_str(*e, "code"), "bad_request");
  EXPECT_EQ(json_int(*e, "rid"), 8);
  a->send(R"({"op":"ping","rid":9})");
  EXPECT_EQ(json_int(a->expect("pong"), "rid"), 9) << "the connection stays open";
}

}  // namespace
}  // namespace parley::testing
