// A channel's resume logic (ChannelCore) against a fake transport: rejoin
// with since, duplicates dropped, gap repair from history, gap and reset
// events, publishes resent with their id, retries, state latest-wins, up.
#include <gtest/gtest.h>

#include "fake_transport.h"

namespace parley::testing {
namespace {

struct ChannelTest : ::testing::Test {
  Harness h;
  Channel ch = h.client->channel("chat:a");
  std::vector<int64_t> seqs;
  std::vector<Gap> gaps;
  std::vector<Reset> resets;
  std::vector<Joined> joins;

  void SetUp() override {
    ch.on_msg([this](const Message& m) { seqs.push_back(m.seq); });
    ch.on_gap([this](const Gap& g) { gaps.push_back(g); });
    ch.on_reset([this](const Reset& r) { resets.push_back(r); });
    ch.on_joined([this](const Joined& j) { joins.push_back(j); });
  }
  // Joined (first join, first connection) at the channel's seq `seq`.
  void joined_at(int64_t seq) {
    ch.join();
    h.welcome();
    h.joined("chat:a", seq);
  }
  void reconnect() {
    h.t->drop();
    h.poll();
    h.advance(20000);
    h.welcome("c" + std::to_string(h.t->count()));
  }
  void deliver(int64_t from, int64_t to) {
    Json batch = Json::array();
    for (int64_t s = from; s <= to; s++) batch.push_back(Harness::msg("chat:a", s));
    h.t->frame(batch);
    h.poll();
  }
  static std::vector<int64_t> range(int64_t a, int64_t b) {
    std::vector<int64_t> v;
    for (int64_t s = a; s <= b; s++) v.push_back(s);
    return v;
  }
};

TEST_F(ChannelTest, JoinConnectsAndStartsAtTheLatestMessage) {
  Result<Joined> first = Error{"none", ""};
  ch.join([&](const Result<Joined>& r) { first = r; });
  EXPECT_EQ(h.client->state(), ClientState::connecting);
  h.welcome();
  auto join = h.t->sent("join");
  ASSERT_EQ(join.size(), 1u);
  EXPECT_FALSE(join[0].contains("since"));
  h.joined("chat:a", 41, false, {{"members", {"u1", "u2"}}});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().seq, 41);
  EXPECT_EQ(first.value().epoch, 1);
  EXPECT_EQ(ch.last_seq(), 41);
  EXPECT_EQ(ch.members(), (std::vector<std::string>{"u1", "u2"}));
  deliver(42, 43);
  EXPECT_EQ(seqs, range(42, 43));
}

TEST_F(ChannelTest, RejoinsWithSinceAndDropsWhatWasDelivered) {
  joined_at(10);
  deliver(11, 15);
  reconnect();
  auto join = h.t->sent("join");
  ASSERT_EQ(join.size(), 1u);
  EXPECT_EQ(join[0]["since"], 15);
  h.joined("chat:a", 18);
  deliver(13, 18);  // the server may resend from before `since`: delivered once
  EXPECT_EQ(seqs, range(11, 18));
  EXPECT_TRUE(gaps.empty());
  ASSERT_EQ(joins.size(), 2u);
}

TEST_F(ChannelTest, JoinSinceGivenByTheApplication) {
  ch.join(nullptr, 0);
  h.welcome();
  EXPECT_EQ(h.t->sent("join").at(0)["since"], 0);
  h.joined("chat:a", 3);
  deliver(1, 3);
  EXPECT_EQ(seqs, range(1, 3));
}

TEST_F(ChannelTest, AHoleIsFilledFromHistoryBeforeAnythingNewer) {
  joined_at(10);
  deliver(11, 11);
  deliver(15, 16);  // 12..14 missing
  EXPECT_EQ(seqs, range(11, 11));
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0]["after"], 11);
  EXPECT_EQ(hist[0]["limit"], 3);
  deliver(17, 17);  // held while repairing
  Json msgs = Json::array({Harness::msg("chat:a", 12), Harness::msg("chat:a", 13), Harness::msg("chat:a", 14)});
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
  h.poll();
  EXPECT_EQ(seqs, range(11, 17));
  EXPECT_TRUE(gaps.empty());
}

TEST_F(ChannelTest, WhatHistoryNoLongerHasIsReportedOnceAsAGap) {
  joined_at(10);
  reconnect();
  h.joined("chat:a", 5000, false);
  deliver(4001, 4002);  // the server sent only its newest; 11..4000 are older
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0]["after"], 10);
  EXPECT_EQ(hist[0]["limit"], 1000);
  // History was trimmed: its oldest is 3990.
  Json msgs = Json::array();
  for (int s = 3990; s <= 4000; s++) msgs.push_back(Harness::msg("chat:a", s));
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
  h.poll();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].from, 11);
  EXPECT_EQ(gaps[0].to, 3989);
  EXPECT_EQ(seqs, range(3990, 4002));
}

// chat:a on a client whose repair buffer holds `cap` messages, joined at
// `seq`: what it delivered and reported, and the server's side of it.
struct SmallBuffer {
  Harness h;
  Channel ch;
  std::vector<int64_t> seqs;
  std::vector<Gap> gaps;
  SmallBuffer(std::size_t cap, int64_t seq)
      : h([cap](ClientOptions& o) { o.max_repair_buffer = cap; }), ch(h.client->channel("chat:a")) {
    ch.on_msg([this](const Message& m) { seqs.push_back(m.seq); });
    ch.on_gap([this](const Gap& g) { gaps.push_back(g); });
    ch.join();
    h.welcome();
    h.joined("chat:a", seq);
  }
  void deliver(int64_t from, int64_t to) {
    Json batch = Json::array();
    for (int64_t s = from; s <= to; s++) batch.push_back(Harness::msg("chat:a", s));
    h.t->frame(batch);
    h.poll();
  }
  /// Answers history request `q` with seqs from..to.
  void answer(const Json& q, int64_t from, int64_t to) {
    Json msgs = Json::array();
    for (int64_t s = from; s <= to; s++) msgs.push_back(Harness::msg("chat:a", s));
    h.t->frame({{"op", "history"}, {"rid", q["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
    h.poll();
  }
};

// A full repair buffer drops the newest held, not the oldest, and reads the
// dropped ones from history once the hole is filled: on a channel that goes
// quiet too (no later message comes to reveal them), and with no gap.
TEST(ChannelRepairBuffer, AFullBufferDropsTheNewestAndReadsItFromHistoryLater) {
  SmallBuffer b(5, 10);
  b.deliver(15, 15);  // a hole: 11..14
  auto hist = b.h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  b.deliver(16, 30);  // held while the page is read: 15..19 kept, 20..30 dropped
  b.answer(hist[0], 11, 14);
  EXPECT_EQ(b.seqs, ChannelTest::range(11, 19));
  hist = b.h.t->sent("history");
  ASSERT_EQ(hist.size(), 2u) << "the dropped ones are read from history without a later message";
  EXPECT_EQ(hist[1]["after"], 19);
  EXPECT_EQ(hist[1]["limit"], 11);
  b.answer(hist[1], 20, 30);  // more than the buffer holds: delivered, not cut down to it
  EXPECT_EQ(b.seqs, ChannelTest::range(11, 30));
  EXPECT_TRUE(b.gaps.empty());
  EXPECT_EQ(b.h.t->sent("history").size(), 2u);
  b.deliver(31, 31);  // live again, at once
  EXPECT_EQ(b.seqs.back(), 31);
}

// A repair read that fails (here: no answer within request_timeout_ms) is
// not history saying the seqs are gone: it is asked again, and a gap is
// reported only after three failures in a row.
TEST_F(ChannelTest, AFailedRepairReadIsAskedAgainNotAGap) {
  joined_at(10);
  deliver(15, 15);  // a hole: 11..14
  ASSERT_EQ(h.t->sent("history").size(), 1u);
  h.advance(30000 + 200);  // the read times out, then the retry delay
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 2u) << "asked again";
  EXPECT_TRUE(gaps.empty());
  EXPECT_EQ(hist[1]["after"], 10);
  Json msgs = Json::array({Harness::msg("chat:a", 11), Harness::msg("chat:a", 12), Harness::msg("chat:a", 13),
                           Harness::msg("chat:a", 14)});
  h.t->frame({{"op", "history"}, {"rid", hist[1]["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
  h.poll();
  EXPECT_EQ(seqs, range(11, 15));
  EXPECT_TRUE(gaps.empty());
  // Three failures in a row: then it is a gap.
  deliver(20, 20);
  for (int i = 0; i < 3; i++) h.advance(30000 + 200);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].from, 16);
  EXPECT_EQ(gaps[0].to, 19);
  EXPECT_EQ(seqs.back(), 20);
}

// A server answering a repair read with seqs already delivered: that is
// history having nothing after ours, a gap, not a read to ask again forever.
TEST_F(ChannelTest, AHistoryPageThatMovesNothingForwardEndsAsAGapInsteadOfALoop) {
  joined_at(10);
  deliver(11, 11);
  deliver(15, 15);
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"},
              {"msgs", Json::array({Harness::msg("chat:a", 10), Harness::msg("chat:a", 11)})}});
  h.poll();
  EXPECT_EQ(h.t->sent("history").size(), 1u) << "asked again for what it will not get";
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].from, 12);
  EXPECT_EQ(gaps[0].to, 14);
  EXPECT_EQ(seqs, (std::vector<int64_t>{11, 15}));
}

// What history no longer has of the dropped ones is a gap, and only that.
TEST(ChannelRepairBuffer, DroppedSeqsHistoryLostAreAGap) {
  SmallBuffer b(3, 0);
  b.deliver(3, 10);  // hole 1..2; 3..5 held, 6..10 dropped
  b.answer(b.h.t->sent("history")[0], 1, 2);
  EXPECT_EQ(b.seqs, ChannelTest::range(1, 5));
  // History was trimmed meanwhile: it starts at 8.
  auto q = b.h.t->sent("history")[1];
  EXPECT_EQ(q["after"], 5);
  b.answer(q, 8, 10);
  ASSERT_EQ(b.gaps.size(), 1u);
  EXPECT_EQ(b.gaps[0].from, 6);
  EXPECT_EQ(b.gaps[0].to, 7);
  EXPECT_EQ(b.seqs, (std::vector<int64_t>{1, 2, 3, 4, 5, 8, 9, 10}));
}

TEST_F(ChannelTest, APageThatStartsLateJoinsWhatIsHeld) {
  joined_at(10);
  deliver(15, 15);
  deliver(20, 20);
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0]["limit"], 4);
  // History was trimmed to 13: the page runs past the first held seq.
  Json msgs = Json::array();
  for (int s = 13; s <= 16; s++) msgs.push_back(Harness::msg("chat:a", s));
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
  h.poll();
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].from, 11);
  EXPECT_EQ(gaps[0].to, 12);
  EXPECT_EQ(seqs, range(13, 16)) << "16 came with the page: it is delivered, not asked for again";
  hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[1]["after"], 16);
  EXPECT_EQ(hist[1]["limit"], 3);
  msgs = Json::array();
  for (int s = 17; s <= 19; s++) msgs.push_back(Harness::msg("chat:a", s));
  h.t->frame({{"op", "history"}, {"rid", hist[1]["rid"]}, {"ch", "chat:a"}, {"msgs", msgs}});
  h.poll();
  EXPECT_EQ(seqs, range(13, 20));
  EXPECT_EQ(gaps.size(), 1u);
}

TEST_F(ChannelTest, WhatArrivesWhileAPageIsReadIsNoGap) {
  joined_at(10);
  deliver(15, 15);
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  deliver(11, 14);  // e.g. a resume: held behind the repair
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"}, {"msgs", Json::array()}});
  h.poll();
  EXPECT_TRUE(gaps.empty());
  EXPECT_EQ(seqs, range(11, 15));
}

TEST_F(ChannelTest, ALogThatStartedOverIsAReset) {
  joined_at(0);
  deliver(1, 7);
  reconnect();
  h.joined("chat:a", 2, false);  // a non-durable namespace after a restart
  ASSERT_EQ(resets.size(), 1u);
  EXPECT_EQ(resets[0].last_seq, 7);
  EXPECT_EQ(resets[0].seq, 2);
  deliver(3, 4);
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 3, 4}));
  EXPECT_TRUE(gaps.empty());
}

TEST_F(ChannelTest, EpochIsReported) {
  ch.join();
  h.welcome();
  h.joined("chat:a", 70000, false, {{"epoch", 2}});
  ASSERT_EQ(joins.size(), 1u);
  EXPECT_EQ(joins[0].epoch, 2);
}

TEST_F(ChannelTest, PublishesWaitForTheJoinAndGoOneAtATime) {
  ch.join();
  std::vector<int64_t> acked;
  for (int i = 0; i < 3; i++) {
    ch.publish({{"i", i}}, [&](const Result<Ack>& r) {
      ASSERT_TRUE(r.ok());
      acked.push_back(r.value().seq);
    });
  }
  h.welcome();
  EXPECT_TRUE(h.t->sent("pub").empty()) << "published before joined";
  h.joined("chat:a", 0);
  auto pubs = h.t->sent("pub");
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0]["id"], "p-1");
  EXPECT_EQ(pubs[0]["body"]["i"], 0);
  for (int i = 0; i < 3; i++) {
    pubs = h.t->sent("pub");
    ASSERT_EQ(pubs.size(), static_cast<size_t>(i + 1));
    h.t->frame({{"op", "ack"}, {"rid", pubs[i]["rid"]}, {"ch", "chat:a"}, {"id", pubs[i]["id"]}, {"seq", i + 1},
                {"dup", false}});
    h.poll();
  }
  EXPECT_EQ(acked, (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(ChannelTest, APublishInFlightIsResentWithItsIdAfterADrop) {
  joined_at(0);
  std::vector<Ack> acks;
  ch.publish({{"x", 1}}, [&](const Result<Ack>& r) { acks.push_back(r.value()); });
  const std::string id = h.t->sent("pub").at(0)["id"];
  reconnect();
  EXPECT_TRUE(h.t->sent("pub").empty()) << "resent before the rejoin";
  h.joined("chat:a", 1);
  auto again = h.t->sent("pub");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["id"], id);
  h.t->frame({{"op", "ack"}, {"rid", again[0]["rid"]}, {"ch", "chat:a"}, {"id", id}, {"seq", 1}, {"dup", true}});
  h.poll();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].seq, 1);
  EXPECT_TRUE(acks[0].dup);
}

TEST_F(ChannelTest, RateLimitedPublishIsRetriedAfterRetryMsAndOtherErrorsFail) {
  joined_at(0);
  std::vector<Retry> retries;
  h.client->on_retry([&](const Retry& r) { retries.push_back(r); });
  Result<Ack> a = Error{"none", ""}, b = Error{"none", ""};
  ch.publish({{"n", 1}}, [&](const Result<Ack>& r) { a = r; });
  auto p = h.t->sent("pub");
  h.t->frame({{"op", "error"}, {"rid", p[0]["rid"]}, {"code", "rate_limited"}, {"retry_ms", 200}});
  h.poll();
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_EQ(retries[0].op, "pub");
  EXPECT_EQ(retries[0].code, "rate_limited");
  h.advance(199);
  EXPECT_EQ(h.t->sent("pub").size(), 1u);
  h.advance(26);  // 200 * (1 + 0.5 * 0.25)
  p = h.t->sent("pub");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1]["id"], p[0]["id"]);
  h.t->frame({{"op", "ack"}, {"rid", p[1]["rid"]}, {"ch", "chat:a"}, {"id", p[1]["id"]}, {"seq", 1}, {"dup", false}});
  ch.publish({{"n", 2}}, [&](const Result<Ack>& r) { b = r; });
  h.poll();
  p = h.t->sent("pub");
  ASSERT_EQ(p.size(), 3u);
  h.t->frame({{"op", "error"}, {"rid", p[2]["rid"]}, {"code", "too_large"}, {"msg", "big"}});
  h.poll();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().seq, 1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, "too_large");
}

TEST_F(ChannelTest, APublishNotAcknowledgedInTimeFails) {
  joined_at(0);
  Result<Ack> a = Error{"none", ""};
  ch.publish({{"n", 1}}, [&](const Result<Ack>& r) { a = r; });
  h.advance(60000);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "timeout");
}

TEST_F(ChannelTest, StateIsLatestWinsAndResentAfterARejoin) {
  ch.join();
  ch.set_state("pos", {{"x", 1}});
  ch.set_state("pos", {{"x", 2}});
  h.welcome();
  EXPECT_TRUE(h.t->sent("state").empty());
  h.joined("chat:a", 0);
  auto st = h.t->sent("state");
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0]["key"], "pos");
  EXPECT_EQ(st[0]["body"]["x"], 2);
  reconnect();
  h.joined("chat:a", 0);
  st = h.t->sent("state");
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0]["body"]["x"], 2);
  ch.clear_state("pos");
  reconnect();
  h.joined("chat:a", 0);
  EXPECT_TRUE(h.t->sent("state").empty());
}

TEST_F(ChannelTest, ARateLimitedStateSendsTheNewestBodyOnceAllowed) {
  joined_at(0);
  ch.set_state("pos", {{"x", 1}});
  auto st = h.t->sent("state");
  h.t->frame({{"op", "error"}, {"rid", st[0]["rid"]}, {"code", "rate_limited"}, {"retry_ms", 100}});
  h.poll();
  ch.set_state("pos", {{"x", 5}});
  EXPECT_EQ(h.t->sent("state").size(), 1u) << "sent while held";
  h.advance(200);
  st = h.t->sent("state");
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[1]["body"]["x"], 5);
}

TEST_F(ChannelTest, UpIsHeldWhileNotJoinedAndRetriedWhenRateLimited) {
  ch.join();
  ch.up({{"a", 1}});
  h.welcome();
  EXPECT_TRUE(h.t->sent("up").empty());
  h.joined("chat:a", 0);
  auto ups = h.t->sent("up");
  ASSERT_EQ(ups.size(), 1u);
  EXPECT_EQ(ups[0]["body"]["a"], 1);
  h.t->frame({{"op", "error"}, {"rid", ups[0]["rid"]}, {"code", "rate_limited"}, {"retry_ms", 50}});
  h.poll();
  h.advance(100);
  ups = h.t->sent("up");
  ASSERT_EQ(ups.size(), 2u);
  EXPECT_EQ(ups[1]["body"]["a"], 1);
}

TEST_F(ChannelTest, PresenceKeepsTheMemberList) {
  std::vector<Presence> ps;
  ch.on_presence([&](const Presence& p) { ps.push_back(p); });
  ch.join();
  h.welcome();
  h.joined("chat:a", 0, true, {{"members", {"u1", "u2"}}});
  h.t->frame({{"op", "presence"}, {"ch", "chat:a"}, {"join", {"u3"}}, {"leave", {"u2"}}});
  h.poll();
  EXPECT_EQ(ch.members(), (std::vector<std::string>{"u1", "u3"}));
  reconnect();
  h.joined("chat:a", 0, true, {{"members", {"u1", "u4"}}});  // changed while away: one event
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[1].join, (std::vector<std::string>{"u4"}));
  EXPECT_EQ(ps[1].leave, (std::vector<std::string>{"u3"}));
}

TEST_F(ChannelTest, LeaveStopsRejoiningAndFailsQueuedPublishes) {
  joined_at(0);
  Result<Ack> a = Error{"none", ""};
  ch.publish({{"n", 1}}, [&](const Result<Ack>& r) { a = r; });
  ch.leave();
  h.poll();
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "left");
  EXPECT_EQ(h.t->sent("leave").size(), 1u);
  reconnect();
  EXPECT_TRUE(h.t->sent("join").empty());
}

TEST_F(ChannelTest, AForbiddenJoinIsFinal) {
  std::string err;
  ch.on_error([&](const Error& e) { err = e.code; });
  Result<Joined> r = Error{"none", ""};
  ch.join([&](const Result<Joined>& x) { r = x; });
  h.welcome();
  h.t->frame({{"op", "error"}, {"rid", h.t->sent("join")[0]["rid"]}, {"code", "forbidden"}});
  h.poll();
  EXPECT_EQ(err, "forbidden");
  ASSERT_FALSE(r.ok());
  reconnect();
  EXPECT_TRUE(h.t->sent("join").empty());
}

TEST_F(ChannelTest, HostileMessagesAreIgnored) {
  joined_at(0);
  h.t->frame({{"op", "msg"}, {"ch", "chat:a"}, {"seq", "1"}, {"body", 1}});
  h.t->frame({{"op", "msg"}, {"ch", "chat:a"}, {"seq", -4}});
  h.t->frame({{"op", "msg"}, {"ch", "chat:a"}, {"seq", 1.5}});
  h.t->frame({{"op", "msg"}, {"ch", 7}, {"seq", 1}});
  h.t->frame({{"op", "msg"}, {"ch", "chat:a"}, {"seq", 18446744073709551615ull}});
  h.t->frame({{"op", 3}});
  h.t->frame({{"op", "joined"}, {"rid", "x"}});
  deliver(1, 2);
  EXPECT_EQ(seqs, range(1, 2));
  EXPECT_EQ(h.client->state(), ClientState::open);
}

}  // namespace
}  // namespace parley::testing
