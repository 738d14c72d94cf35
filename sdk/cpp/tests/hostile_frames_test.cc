// Every input from the network is hostile: frames of every op with fields of
// the wrong type, truncated or bit-flipped bytes, fed to a joined client with
// requests in flight. The client must neither crash nor throw, and what it
// delivers stays strictly increasing per channel.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "fake_transport.h"

namespace parley::testing {
namespace {

Json wrong_value(std::mt19937& rng) {
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0: return nullptr;
    case 1: return "x";
    case 2: return -1;
    case 3: return 18446744073709551615ull;
    case 4: return 1.5;
    case 5: return Json::array({1, "a", nullptr});
    case 6: return Json::object({{"op", "msg"}});
    case 7: return true;
    case 8: return INT64_MIN;
    default: return std::string(300, 'y');
  }
}

TEST(HostileFrames, WrongTypesAndBrokenBytesNeverCrashOrReorder) {
  Harness h;
  Channel ch = h.client->channel("chat:a");
  std::vector<int64_t> seqs;
  ch.on_msg([&](const Message& m) { seqs.push_back(m.seq); });
  ch.on_edit([&](const Message& m) { seqs.push_back(m.seq); });
  ch.on_delete([&](const Message& m) { seqs.push_back(m.seq); });
  ch.on_state([](const State& s) { (void)s.body.dump(); });
  ch.join();
  h.welcome();
  h.joined("chat:a", 0, true, {{"members", {"u1"}}});
  std::mt19937 rng(7);
  int64_t seq = 0;
  std::set<int64_t> answered;
  for (int i = 0; i < 3000; i++) {
    // Requests in flight, so replies and errors have something to hit.
    if (i % 50 == 0) {
      ch.publish({{"n", i}});
      ch.set_state("k", {{"n", i}});
      ch.up({{"n", i}});
      ch.history({seq, {}, 10}, [](const Result<std::vector<Message>>&) {});
      ch.edit(std::max<int64_t>(1, seq), {{"n", i}}, [](const Result<Moderated>&) {});
      ch.delete_message(std::max<int64_t>(1, seq), [](const Result<Moderated>&) {});
    }
    const int64_t rid = static_cast<int64_t>(std::uniform_int_distribution<int>(1, 200)(rng));
    const size_t kind = std::uniform_int_distribution<size_t>(0, 13)(rng);
    if (kind == 0 || kind == 10 || kind == 11) ++seq;
    std::vector<Json> valid = {
        Harness::msg("chat:a", seq, {{"i", seq}}),
        {{"op", "state"}, {"ch", "chat:a"}, {"from", "u2"}, {"key", "pos"}, {"body", {1, 2}}, {"pos", {1, 2}}},
        {{"op", "presence"}, {"ch", "chat:a"}, {"join", {"u3"}}, {"leave", {"u2"}}},
        {{"op", "ack"}, {"rid", rid}, {"ch", "chat:a"}, {"id", "p-1"}, {"seq", seq}, {"dup", false}},
        {{"op", "history"}, {"rid", rid}, {"ch", "chat:a"}, {"msgs", {Harness::msg("chat:a", seq)}}},
        {{"op", "error"}, {"rid", rid}, {"code", "rate_limited"}, {"retry_ms", 5}},
        {{"op", "joined"}, {"rid", rid}, {"ch", "chat:a"}, {"seq", seq}, {"recovered", true}, {"members", {"u1"}}},
        {{"op", "direct"}, {"from", "server"}, {"body", {{"a", 1}}}},
        {{"op", "bye"}, {"code", "draining"}, {"reconnect_ms", 100}},
        {{"op", "welcome"}, {"rid", rid}, {"conn", "c9"}},
        {{"op", "edit"}, {"ch", "chat:a"}, {"seq", seq}, {"target", std::max<int64_t>(1, seq - 1)}, {"from", "m"}, {"ts", 1}, {"body", {1}}},
        {{"op", "delete"}, {"ch", "chat:a"}, {"seq", seq}, {"target", std::max<int64_t>(1, seq - 1)}, {"from", "m"}, {"ts", 1}},
        {{"op", "edited"}, {"rid", rid}, {"ch", "chat:a"}, {"target", 1}, {"seq", seq}},
        {{"op", "kicked"}, {"ch", "chat:a"}, {"reason", "r"}},
    };
    Json f = valid[kind];
    const int how = std::uniform_int_distribution<int>(0, 3)(rng);
    if (how == 0) {
      // One field of the wrong type.
      auto it = f.begin();
      std::advance(it, std::uniform_int_distribution<int>(0, static_cast<int>(f.size()) - 1)(rng));
      it.value() = wrong_value(rng);
      h.t->frame(f);
    } else if (how == 1) {
      std::string bytes = f.dump();
      bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size())(rng));
      h.t->raw(bytes);
    } else if (how == 2) {
      std::string bytes = f.dump();
      bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)] ^=
          static_cast<char>(1 << std::uniform_int_distribution<int>(0, 7)(rng));
      h.t->raw(bytes);
    } else {
      h.t->frame(Json::array({f, wrong_value(rng)}));
    }
    h.poll();
    h.now += 10;
    // Gap repairs get honest answers, so delivery goes on between the attacks.
    for (const Json& q : h.t->sent("history")) {
      const int64_t qr = q["rid"];
      if (!answered.insert(qr).second || !q.contains("after")) continue;
      Json msgs = Json::array();
      for (int64_t s = q["after"].get<int64_t>() + 1; s <= seq && msgs.size() < 1000; s++) msgs.push_back(Harness::msg("chat:a", s));
      h.t->frame({{"op", "history"}, {"rid", qr}, {"ch", "chat:a"}, {"msgs", msgs}});
    }
    h.poll();
    ASSERT_NE(h.client->state(), ClientState::closed);
    if (!ch.joined()) {
      // A hostile reply can end a join for good (an error answering its
      // rid), as a real refusal would, and so does a `kicked`: the
      // application joins again. The server's log holds at least what was
      // delivered (a bit-flipped seq may have run ahead of the test's counter).
      ch.join();
      h.poll();
      h.joined("chat:a", std::max(seq, ch.last_seq()));
    }
  }
  ASSERT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  ASSERT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end());
  EXPECT_GT(seqs.size(), 100u) << "the test delivered almost nothing: it tested nothing";
}

}  // namespace
}  // namespace parley::testing
