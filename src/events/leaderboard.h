// A leaderboard (PROTOCOL.md "Event streams and leaderboards"): a built-in
// processor fed by the committed events of one topic and type. It keeps one
// OrderBoard per round (or one, without rounds), pushes every interval_ms the
// boards that changed to the connections in channel lb:NAME[:ROUND] (each with
// its own entry as `me`), and answers `rank`.
//
// Owned by its topic's loop (topic.h), which alone calls it; pushes are posted
// from there to each watcher's loop. After a restart the topic replays what it
// holds into it (rebuilding): events committed meanwhile wait, in order, and so
// do `rank` requests, so that every read includes every event acknowledged
// before it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "events/order_board.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "events/event_service.h"
#include "tenant/tenant_config.h"

namespace parley::events {

class Leaderboard {
 public:
  Leaderboard(unsigned loop, runtime::LoopGroup& loops, std::string name,
              const LeaderboardConfig& cfg, metrics::Metrics& metrics);
  ~Leaderboard();
  Leaderboard(const Leaderboard&) = delete;
  Leaderboard& operator=(const Leaderboard&) = delete;

  // One event of the topic (committed, in offset order per partition). `body`
  // is the event's body as JSON text.
  void on_event(std::string_view type, std::string_view body);

  // Rebuilding: events given to on_event wait until finish_rebuild(), which
  // applies them after the replayed ones; replay() applies one replayed event.
  void begin_rebuild();
  void replay(std::string_view type, std::string_view body) { apply(type, body); }
  void finish_rebuild();

  // Snapshots (topic.cc): every round's members and scores as a JSON array
  // [{"round","touched","e":[[member,score],...]}...], and its load into this
  // board while it is rebuilding (replacing what it held); false, the board
  // left empty, when `rounds` is not such an array.
  void write_snapshot(std::string& out) const;
  bool restore(simdjson::dom::element rounds);
  bool rebuilding() const { return rebuilding_; }
  void reset() { rounds_.clear(); }

  void rank(RankRequest req);
  // A connection joined (left) channel lb:NAME[:ROUND].
  void watch(const std::string& round, std::weak_ptr<EventSink> sink, uint64_t conn,
             std::string user);
  void unwatch(const std::string& round, uint64_t conn);

  const std::string& name() const { return name_; }
  bool has_rounds() const { return !cfg_.round.empty(); }
  // Recompute-and-push passes run so far and the time each took (metrics).
  uint64_t pushes() const { return pushes_; }

  // Rounds kept per board; past it the least recently changed one is dropped.
  static constexpr size_t kMaxRounds = 256;

 private:
  struct Watcher {
    std::weak_ptr<EventSink> sink;
    std::string user;
    bool fresh = true;  // joined since the last push: gets the board even unchanged
  };
  struct Round {
    explicit Round(const LeaderboardConfig& cfg);
    std::unique_ptr<OrderBoard> board;
    bool changed = false;
    uint64_t touched = 0;  // a counter of changes, for dropping the oldest round
  };

  void apply(std::string_view type, std::string_view body);
  Round* find_round(const std::string& round);
  Round& round(const std::string& round);
  void arm();
  void push();
  void push_round(const std::string& round, const Round* r, std::map<uint64_t, Watcher>& ws);

  unsigned loop_;
  runtime::LoopGroup& loops_;
  std::string name_;
  const LeaderboardConfig& cfg_;
  std::map<std::string, Round, std::less<>> rounds_;  // "" without rounds
  std::map<std::string, std::map<uint64_t, Watcher>, std::less<>> watchers_;  // by round
  bool rebuilding_ = false;
  std::vector<std::pair<std::string, std::string>> held_;  // (type, body) while rebuilding
  std::vector<RankRequest> held_ranks_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point next_push_;
  uint64_t touches_ = 0;
  uint64_t pushes_ = 0;
  metrics::Metrics& metrics_;
};

}  // namespace parley::events
