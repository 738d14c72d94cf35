// A channel's delivery guarantee under a hostile, randomised server: live
// batches that skip, repeat and reorder messages, drops and rejoins with
// `since`, history that is trimmed as it goes. Whatever happens, what the
// application sees is strictly increasing seqs, each once, and a seq is
// reported in a `gap` only when history no longer held it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "fake_transport.h"

namespace parley::testing {
namespace {

struct World {
  Harness h;
  Channel ch = h.client->channel("chat:p");
  std::mt19937 rng;
  int64_t latest = 0;      // the server's log: seqs 1..latest
  int64_t kept_from = 1;   // history holds kept_from..latest
  std::vector<int64_t> delivered;
  std::vector<Gap> gaps;
  std::set<int64_t> answered;  // history rids answered
  bool ok = true;

  int64_t max_sent = 0;  // the newest seq any frame carried to the client

  explicit World(unsigned seed, std::size_t repair_buffer = 10000)
      : h([repair_buffer](ClientOptions& o) { o.max_repair_buffer = repair_buffer; }), rng(seed) {
    ch.on_msg([this](const Message& m) { delivered.push_back(m.seq); });
    ch.on_gap([this](const Gap& g) {
      gaps.push_back(g);
      // Only what history could not give may be a gap.
      if (g.to >= kept_from) ok = false;
    });
  }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

  void join_answer() {
    auto joins = h.t->sent("join");
    if (joins.empty()) return;
    const Json& j = joins.back();
    const int64_t since = j.value("since", latest);
    h.t->frame({{"op", "joined"}, {"rid", j["rid"]}, {"ch", "chat:p"}, {"seq", latest},
                {"recovered", since + 1 >= kept_from}});
    Json batch = Json::array();
    for (int64_t s = std::max(since + 1, kept_from); s <= latest; s++) batch.push_back(Harness::msg("chat:p", s));
    if (!batch.empty()) max_sent = std::max(max_sent, latest);
    if (!batch.empty()) h.t->frame(batch);
    h.poll();
  }
  void answer_history() {
    for (const Json& q : h.t->sent("history")) {
      const int64_t rid = q["rid"];
      if (answered.count(rid)) continue;
      answered.insert(rid);
      const int64_t after = q["after"], limit = q["limit"];
      Json msgs = Json::array();
      for (int64_t s = std::max(after + 1, kept_from); s <= latest && static_cast<int64_t>(msgs.size()) < limit; s++) {
        msgs.push_back(Harness::msg("chat:p", s));
      }
      h.t->frame({{"op", "history"}, {"rid", rid}, {"ch", "chat:p"}, {"msgs", msgs}});
    }
    h.poll();
  }
  void step() {
    switch (pick(6)) {
      case 0:
      case 1:
      case 2: {  // new messages, delivered live with holes, repeats and swaps
        const int n = 1 + pick(20);
        Json batch = Json::array();
        for (int k = 0; k < n; k++) {
          ++latest;
          if (pick(10) == 0) continue;  // a hole
          batch.push_back(Harness::msg("chat:p", latest));
          max_sent = latest;
          if (pick(10) == 0) batch.push_back(Harness::msg("chat:p", std::max<int64_t>(1, latest - pick(30))));
        }
        if (batch.size() > 1 && pick(4) == 0) std::swap(batch[0], batch[batch.size() - 1]);
        if (!batch.empty()) h.t->frame(batch);
        h.poll();
        break;
      }
      case 3:  // history trimmed
        kept_from = std::min(latest + 1, kept_from + pick(40));
        break;
      case 4:  // a drop, then a rejoin
        h.t->drop();
        h.poll();
        h.advance(20000);
        h.welcome("c" + std::to_string(h.t->count()));
        join_answer();
        break;
      default:
        answer_history();
    }
  }
};

// Each seed: 250 random steps, then every repair answered; whatever came,
// strictly rising seqs, each once, gaps only for what history lost, and
// everything up to the newest seq the client was sent delivered or in a gap
// (a repair buffer that dropped its newest reads them back, also on a
// channel gone quiet).
void run_seeds(std::size_t repair_buffer, unsigned seeds) {
  for (unsigned seed = 1; seed <= seeds; seed++) {
    World w(seed, repair_buffer);
    w.ch.join();
    w.h.welcome();
    w.join_answer();
    for (int i = 0; i < 250; i++) w.step();
    for (int i = 0; i < 40; i++) w.answer_history();  // let every repair finish
    SCOPED_TRACE("seed " + std::to_string(seed) + ", repair buffer " + std::to_string(repair_buffer));
    ASSERT_TRUE(w.ok) << "a gap covered seqs history still had";
    ASSERT_TRUE(std::is_sorted(w.delivered.begin(), w.delivered.end()));
    ASSERT_EQ(std::adjacent_find(w.delivered.begin(), w.delivered.end()), w.delivered.end()) << "a seq twice";
    // Every seq from the first delivered to the last is delivered or in one gap.
    std::set<int64_t> seen(w.delivered.begin(), w.delivered.end());
    for (const Gap& g : w.gaps) {
      for (int64_t s = g.from; s <= g.to; s++) ASSERT_TRUE(seen.insert(s).second) << "seq " << s << " twice";
    }
    if (!w.delivered.empty()) {
      ASSERT_EQ(static_cast<int64_t>(seen.size()), *seen.rbegin() - *seen.begin() + 1) << "a seq lost unreported";
      ASSERT_GE(*seen.rbegin(), w.max_sent) << "seqs the client was sent never delivered nor reported";
    }
  }
}

TEST(StreamProperty, EachSeqOnceInOrderAndGapsOnlyForWhatHistoryLost) { run_seeds(10000, 150); }

// A repair buffer of 4: nearly every repair overflows it (and takes many
// more reads, some of them timing out across drops).
TEST(StreamProperty, AFullRepairBufferLosesNothingHistoryHas) { run_seeds(4, 60); }

}  // namespace
}  // namespace parley::testing
