// Edits, deletes and kicks (PROTOCOL.md "Moderation") in the state machine,
// against the fake transport: the ops and their replies and errors, the
// `edit` / `delete` entries in the channel's seq stream (live, in a gap
// repair from history, and malformed ones dropped like a malformed msg),
// history's current versions, and `kicked` ending the membership for good.
#include <gtest/gtest.h>

#include <parley/message_log.h>

#include "fake_transport.h"

namespace parley::testing {
namespace {

struct ModerationTest : ::testing::Test {
  Harness h;
  Channel ch = h.client->channel("chat:a");
  std::vector<std::string> seen;  // "msg 11", "edit 12>11", "delete 13>11"

  void SetUp() override {
    ch.on_msg([this](const Message& m) { seen.push_back("msg " + std::to_string(m.seq)); });
    ch.on_edit([this](const Message& m) {
      EXPECT_EQ(m.kind, EntryKind::edit);
      seen.push_back("edit " + std::to_string(m.seq) + ">" + std::to_string(m.target) + " " + m.body.dump());
    });
    ch.on_delete([this](const Message& m) {
      EXPECT_EQ(m.kind, EntryKind::deletion);
      EXPECT_TRUE(m.body.is_null());
      seen.push_back("delete " + std::to_string(m.seq) + ">" + std::to_string(m.target));
    });
  }
  void joined_at(int64_t seq) {
    ch.join();
    h.welcome();
    h.joined("chat:a", seq);
  }
  static Json edit(int64_t seq, int64_t target, Json body) {
    return {{"op", "edit"}, {"ch", "chat:a"}, {"seq", seq}, {"target", target}, {"from", "mod7"},
            {"ts", 5}, {"body", body}};
  }
  static Json del(int64_t seq, int64_t target) {
    return {{"op", "delete"}, {"ch", "chat:a"}, {"seq", seq}, {"target", target}, {"from", "mod7"}, {"ts", 6}};
  }
};

TEST_F(ModerationTest, EditAndDeleteAnswerTheirOwnSeqAndTarget) {
  joined_at(10);
  Result<Moderated> e = Error{"none", ""};
  Result<Moderated> d = Error{"none", ""};
  ch.edit(7, {{"t", "fixed"}}, [&](const Result<Moderated>& r) { e = r; });
  ch.delete_message(8, [&](const Result<Moderated>& r) { d = r; });
  h.poll();
  auto edits = h.t->sent("edit");
  auto dels = h.t->sent("delete");
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_EQ(dels.size(), 1u);
  EXPECT_EQ(edits[0]["ch"], "chat:a");
  EXPECT_EQ(edits[0]["target"], 7);
  EXPECT_EQ(edits[0]["body"], (Json{{"t", "fixed"}}));
  EXPECT_EQ(dels[0]["target"], 8);
  EXPECT_FALSE(dels[0].contains("body"));
  h.t->frame({{"op", "edited"}, {"rid", edits[0]["rid"]}, {"ch", "chat:a"}, {"target", 7}, {"seq", 11}});
  h.t->frame({{"op", "error"}, {"rid", dels[0]["rid"]}, {"code", "forbidden"}, {"msg", "not the author"}});
  h.poll();
  ASSERT_TRUE(e.ok()) << e.error().code;
  EXPECT_EQ(e.value().seq, 11);
  EXPECT_EQ(e.value().target, 7);
  EXPECT_EQ(e.value().ch, "chat:a");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, "forbidden");
  EXPECT_EQ(d.error().message, "not the author");
}

TEST_F(ModerationTest, ARetryableRefusalIsSentAgainAndABadTargetNever) {
  joined_at(10);
  Result<Moderated> d = Error{"none", ""};
  Result<Moderated> bad = Error{"none", ""};
  ch.delete_message(4, [&](const Result<Moderated>& r) { d = r; });
  ch.edit(0, 1, [&](const Result<Moderated>& r) { bad = r; });
  h.poll();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "bad_request");
  ASSERT_EQ(h.t->sent("edit").size(), 0u);
  auto dels = h.t->sent("delete");
  ASSERT_EQ(dels.size(), 1u);
  h.t->frame({{"op", "error"}, {"rid", dels[0]["rid"]}, {"code", "rate_limited"}, {"retry_ms", 50}});
  h.advance(500);
  dels = h.t->sent("delete");
  ASSERT_EQ(dels.size(), 2u);
  h.t->frame({{"op", "deleted"}, {"rid", dels[1]["rid"]}, {"ch", "chat:a"}, {"target", 4}, {"seq", 12}});
  h.poll();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value().seq, 12);
  // A reply without integers is not a success.
  Result<Moderated> odd = Error{"none", ""};
  ch.edit(5, "x", [&](const Result<Moderated>& r) { odd = r; });
  h.poll();
  auto edits = h.t->sent("edit");
  h.t->frame({{"op", "edited"}, {"rid", edits.back()["rid"]}, {"ch", "chat:a"}, {"target", "5"}, {"seq", 13}});
  h.poll();
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().code, "bad_frame");
}

TEST_F(ModerationTest, LiveEntriesAreInTheSeqStreamWithMsgs) {
  joined_at(10);
  h.t->frame(Json::array({Harness::msg("chat:a", 11), edit(12, 11, {{"t", 2}}), del(13, 11), Harness::msg("chat:a", 14)}));
  h.poll();
  EXPECT_EQ(seen, (std::vector<std::string>{"msg 11", "edit 12>11 {\"t\":2}", "delete 13>11", "msg 14"}));
  EXPECT_EQ(ch.last_seq(), 14);
  EXPECT_TRUE(h.t->sent("history").empty()) << "no hole: the entries took their seqs";
  // A resend of an entry already delivered is dropped as a msg's would be.
  h.t->frame(edit(12, 11, {{"t", 2}}));
  h.poll();
  EXPECT_EQ(seen.size(), 4u);
}

TEST_F(ModerationTest, AHoleIsRepairedWithHistorysEntriesAndCurrentVersions) {
  joined_at(10);
  h.t->frame(Harness::msg("chat:a", 15));
  h.poll();
  auto hist = h.t->sent("history");
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0]["after"], 10);
  Json edited = Harness::msg("chat:a", 11, {{"t", "new"}});
  edited["edited"] = 99;
  Json tomb = {{"op", "msg"}, {"ch", "chat:a"}, {"seq", 12}, {"from", "u2"}, {"id", "m12"}, {"ts", 1}, {"deleted", true}};
  std::vector<Message> got;
  ch.on_msg([&](const Message& m) {
    got.push_back(m);
    seen.push_back("msg " + std::to_string(m.seq));
  });
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"},
              {"msgs", {edited, tomb, edit(13, 11, {{"t", "new"}}), del(14, 12)}}});
  h.poll();
  EXPECT_EQ(seen, (std::vector<std::string>{"msg 11", "msg 12", "edit 13>11 {\"t\":\"new\"}", "delete 14>12", "msg 15"}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].edited, 99);
  EXPECT_FALSE(got[0].deleted);
  EXPECT_TRUE(got[1].deleted);
  EXPECT_EQ(got[1].edited, -1);
  EXPECT_TRUE(got[1].body.is_null());
  EXPECT_EQ(got[2].edited, -1);
  EXPECT_FALSE(got[2].deleted);
}

TEST_F(ModerationTest, HistoryHandsOverEntriesOfEveryKind) {
  joined_at(10);
  Result<std::vector<Message>> page = Error{"none", ""};
  ch.history({0, {}, 10}, [&](const Result<std::vector<Message>>& r) { page = r; });
  h.poll();
  auto hist = h.t->sent("history");
  h.t->frame({{"op", "history"}, {"rid", hist[0]["rid"]}, {"ch", "chat:a"},
              {"msgs", {Harness::msg("chat:a", 1), edit(2, 1, 5), del(3, 1)}}});
  h.poll();
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page.value().size(), 3u);
  EXPECT_EQ(page.value()[0].kind, EntryKind::msg);
  EXPECT_EQ(page.value()[1].kind, EntryKind::edit);
  EXPECT_EQ(page.value()[1].target, 1);
  EXPECT_EQ(page.value()[1].body, 5);
  EXPECT_EQ(page.value()[2].kind, EntryKind::deletion);
  EXPECT_TRUE(page.value()[1].id.empty());
}

// Handled like a msg without a seq: dropped. Its seq then is a hole, which
// history fills (or reports as a gap) as for any lost msg.
TEST_F(ModerationTest, MalformedEntriesAreDroppedNotDelivered) {
  joined_at(10);
  Json no_target = edit(11, 1, 1);
  no_target.erase("target");
  Json str_target = del(11, 1);
  str_target["target"] = "1";
  Json future_target = edit(11, 11, 1);  // changes itself: not a log the server writes
  Json neg = del(11, -3);
  Json no_seq = edit(11, 1, 1);
  no_seq["seq"] = "11";
  for (const Json& f : {no_target, str_target, future_target, neg, no_seq}) h.t->frame(f);
  h.t->raw(R"({"op":"edit","ch":"chat:a","seq":11,"target":)");
  h.t->frame({{"op", "kicked"}, {"ch", 5}});
  h.t->frame({{"op", "kicked"}});
  h.poll();
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(ch.last_seq(), 10);
  EXPECT_TRUE(ch.joined()) << "a kicked frame without a channel name kicks nothing";
  EXPECT_NE(h.client->state(), ClientState::closed);
  h.t->frame(Harness::msg("chat:a", 11));
  h.poll();
  EXPECT_EQ(seen, (std::vector<std::string>{"msg 11"}));
}

TEST_F(ModerationTest, KickedFailsWhatWaitsAndNeverRejoins) {
  joined_at(10);
  std::vector<Kicked> kicks;
  ch.on_kicked([&](const Kicked& k) { kicks.push_back(k); });
  Result<Ack> ack = Error{"none", ""};
  ch.publish({{"t", 1}}, [&](const Result<Ack>& r) { ack = r; });
  h.poll();
  ASSERT_EQ(h.t->sent("pub").size(), 1u);
  h.t->frame({{"op", "kicked"}, {"ch", "chat:a"}, {"reason", "spamming links"}});
  h.poll();
  ASSERT_EQ(kicks.size(), 1u);
  EXPECT_EQ(kicks[0].ch, "chat:a");
  EXPECT_EQ(kicks[0].reason, "spamming links");
  ASSERT_FALSE(ack.ok());
  EXPECT_EQ(ack.error().code, "kicked");
  EXPECT_EQ(ack.error().message, "spamming links");
  EXPECT_FALSE(ch.joined());
  // Live entries after the kick are not ours any more.
  h.t->frame(Harness::msg("chat:a", 11));
  h.poll();
  EXPECT_TRUE(seen.empty());
  // A reconnect does not rejoin it, and a second kicked changes nothing.
  h.t->frame({{"op", "kicked"}, {"ch", "chat:a"}});
  h.t->drop();
  h.poll();
  h.advance(20000);
  h.welcome("c2");
  EXPECT_TRUE(h.t->sent("join").empty());
  EXPECT_EQ(kicks.size(), 1u);
  // join() again tries anyway, from where it was.
  ch.join();
  h.poll();
  auto join = h.t->sent("join");
  ASSERT_EQ(join.size(), 1u);
  EXPECT_EQ(join[0]["since"], 10);
}

// PROTOCOL.md: a join in flight gets `kicked`, then its `joined`, then a `left`
// without rid; the join's waiter fails with `kicked` and the late joined is not taken.
TEST_F(ModerationTest, AKickDuringAJoinFailsTheJoin) {
  std::vector<Kicked> kicks;
  ch.on_kicked([&](const Kicked& k) { kicks.push_back(k); });
  Result<Joined> j = Error{"none", ""};
  ch.join([&](const Result<Joined>& r) { j = r; });
  h.welcome();
  auto join = h.t->sent("join");
  ASSERT_EQ(join.size(), 1u);
  h.t->frame({{"op", "kicked"}, {"ch", "chat:a"}, {"reason", ""}});
  h.t->frame({{"op", "joined"}, {"rid", join[0]["rid"]}, {"ch", "chat:a"}, {"seq", 3}, {"recovered", false}});
  h.t->frame({{"op", "left"}, {"ch", "chat:a"}});
  h.poll();
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, "kicked");
  EXPECT_EQ(j.error().message, "kicked from chat:a");
  ASSERT_EQ(kicks.size(), 1u);
  EXPECT_EQ(kicks[0].reason, "");
  EXPECT_FALSE(ch.joined());
}

Message entry(EntryKind kind, int64_t seq, int64_t target, Json body = nullptr, int64_t ts = 0) {
  Message m;
  m.ch = "chat:a";
  m.seq = seq;
  m.kind = kind;
  m.target = target;
  m.body = std::move(body);
  m.ts = ts;
  return m;
}

// What a log must hold after m1 edited and m2 deleted, fed live or from history.
void expect_current(const MessageLog& log) {
  ASSERT_EQ(log.size(), 2u);
  auto ms = log.messages();
  EXPECT_EQ(ms[0].body, (Json{{"t", "fixed"}}));
  EXPECT_EQ(ms[0].edited, 60);
  EXPECT_TRUE(ms[1].deleted);
  EXPECT_TRUE(ms[1].body.is_null());
}

TEST(MessageLog, AppliesEditsAndDeletesLiveAndFromHistoryAlike) {
  Message m1 = entry(EntryKind::msg, 1, 0, {{"t", "tpyo"}});
  Message m2 = entry(EntryKind::msg, 2, 0, {{"t", "oops"}});
  Message e = entry(EntryKind::edit, 3, 1, {{"t", "fixed"}}, 60);
  Message d = entry(EntryKind::deletion, 4, 2);
  MessageLog live;
  for (auto* x : {&m1, &m2, &e, &d}) live.apply(*x);
  expect_current(live);
  // History: current versions and then the entries; applying them again changes nothing.
  Message c1 = m1;
  c1.body = {{"t", "fixed"}};
  c1.edited = 60;
  Message c2 = m2;
  c2.body = nullptr;
  c2.deleted = true;
  MessageLog paged;
  paged.apply_all({c1, c2, e, d});
  expect_current(paged);
  // Pages again, in another order, and the original versions read late: no change.
  paged.apply_all({d, e, m1, m2, c2, c1});
  expect_current(paged);
  live.apply_all({m1, m2});
  expect_current(live);
}

TEST(MessageLog, ADeleteIsFinalAndEntriesForUnheldMessagesChangeNothing) {
  MessageLog log;
  log.apply(entry(EntryKind::msg, 5, 0, 1));
  EXPECT_EQ(log.apply(entry(EntryKind::edit, 6, 4, 2)), nullptr);
  ASSERT_NE(log.apply(entry(EntryKind::deletion, 7, 5)), nullptr);
  EXPECT_EQ(log.apply(entry(EntryKind::edit, 8, 5, 3, 99)), nullptr) << "an edit after a delete (two game servers racing)";
  EXPECT_EQ(log.apply(entry(EntryKind::deletion, 9, 5)), nullptr);
  EXPECT_TRUE(log.get(5)->deleted);
  EXPECT_EQ(log.get(4), nullptr);
}

TEST(MessageLog, KeepsTheNewestSeqsUpToItsMax) {
  MessageLog log(2);
  for (int64_t s = 1; s <= 4; s++) log.apply(entry(EntryKind::msg, s, 0, s));
  EXPECT_EQ(log.size(), 2u);
  EXPECT_EQ(log.get(2), nullptr);
  EXPECT_NE(log.get(3), nullptr);
  EXPECT_EQ(log.apply(entry(EntryKind::msg, 1, 0, 1)), nullptr) << "older than what is kept";
  EXPECT_EQ(log.size(), 2u);
}

}  // namespace
}  // namespace parley::testing
