// One node following a log that a shared store numbers (Store::assigns_seq:
// several nodes append to one channel or topic partition). The entries reach
// the node as its own appends' answers and the other nodes' pushes: out of
// order, twice, or not at all (a push lost with a subscriber's connection).
// LogFollower holds those above the next expected seq, lets them go in seq
// order, and reads a gap that stays open for `gap` back from the store, a page
// at a time. A seq the store no longer holds (trimmed before this node read
// it: the fill's first entry is past it, or three fills in a row found nothing
// below what is held) is passed over, so that the log goes on.
//
// Channels (hub/shard_cross_node.cc) and topic partitions (events/partition.cc)
// each keep one. Not thread-safe: every method and hook runs on the owner's
// loop; the store's answers are brought back to it. The timer and the fill
// hold the follower's state weakly: an owner may go with a fill in flight.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/loop_group.h"
#include "store/store.h"

namespace parley::store {

template <typename Entry>
class LogFollower {
 public:
  struct Hooks {
    // An entry leaves the hold, in seq order. `next`: `seq` is the log's next
    // and committed has moved to it (deliver it); otherwise that seq was passed
    // over already and only what rides with the entry is left to do.
    std::function<void(uint64_t seq, Entry& e, bool next)> release;
    // An entry read back from the store by a fill.
    std::function<Entry(StoredMessage& m)> from_store;
    // Seqs from..to are passed over: the store no longer holds them.
    std::function<void(uint64_t from, uint64_t to)> passed_over;
    // A fill starts (for a metric). May be empty.
    std::function<void()> on_fill;
  };

  struct Limits {
    std::chrono::milliseconds gap;  // how long a gap may stay open before a fill
    uint64_t max_ahead;             // entries held beyond committed + 1; further ones are read
    uint32_t page;                  // entries per fill read
  };

  // `committed` is the owner's counter of the last seq it delivered: the
  // follower moves it as entries leave (and the owner, when it recovers).
  LogFollower(runtime::LoopGroup& loops, unsigned loop, Store& store, ChannelKey key,
              uint64_t& committed, Limits limits, Hooks hooks)
      : s_(std::make_shared<State>(loops, loop, store, std::move(key), committed, limits,
                                   std::move(hooks))) {}
  ~LogFollower() { s_->timer.cancel(); }
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Whether an entry of `seq` would be news: past committed and not held yet.
  bool wants(uint64_t seq) const { return seq > s_->committed && !s_->held.contains(seq); }
  // The entry held for `seq`, for the owner to add to it; null when none.
  Entry* held(uint64_t seq) {
    auto it = s_->held.find(seq);
    return it == s_->held.end() ? nullptr : &it->second;
  }
  // Nothing held and no fill in flight: the owner may go.
  bool idle() const { return s_->held.empty() && !s_->filling; }

  // An entry with seq > committed (see wants()). Returns false when it was too
  // far ahead to hold: a fill reads it back in order.
  bool hold(uint64_t seq, Entry e) { return State::hold(s_, seq, std::move(e), false); }
  // The same for an entry that cannot be read back (the answer to this node's
  // own append, with what rides on it): held however far ahead, bounded by the
  // owner's appends in flight.
  void keep(uint64_t seq, Entry e) { State::hold(s_, seq, std::move(e), true); }

  // While paused (the owner recovers its committed seq) entries are held, at
  // most max_ahead of them, and neither released nor filled.
  void pause() { s_->paused = true; }
  void resume() {
    s_->paused = false;
    State::release(s_);
    if (s_->behind) State::fill(s_);
  }
  // Reads what may have been missed now (a feed subscription was re-made).
  void fill() {
    if (!s_->paused) State::fill(s_);
  }

 private:
  struct State {
    State(runtime::LoopGroup& l, unsigned lp, Store& st, ChannelKey k, uint64_t& c, Limits lim,
          Hooks h)
        : loops(l), loop(lp), store(st), key(std::move(k)), committed(c), limits(lim),
          hooks(std::move(h)), timer(l.loop(lp)) {}

    runtime::LoopGroup& loops;
    unsigned loop;
    Store& store;
    ChannelKey key;
    uint64_t& committed;
    Limits limits;
    Hooks hooks;
    std::map<uint64_t, Entry> held;  // seqs above committed, or at it once passed over
    boost::asio::steady_timer timer;
    bool armed = false;    // a gap check is scheduled
    bool filling = false;  // a fill read is in flight
    bool behind = false;   // an entry too far ahead was left to the fill
    bool paused = false;
    uint32_t misses = 0;   // fills in a row that did not close the gap

    static bool hold(const std::shared_ptr<State>& s, uint64_t seq, Entry e, bool keep) {
      // Paused, committed is not known yet: bounded by count instead.
      const bool room = keep || (s->paused ? s->held.size() < s->limits.max_ahead
                                           : seq - s->committed <= s->limits.max_ahead);
      if (!room) {
        s->behind = true;
        if (!s->paused) fill(s);
        return false;
      }
      s->held.emplace(seq, std::move(e));
      if (!s->paused) release(s);
      return true;
    }

    static void release(const std::shared_ptr<State>& s) {
      while (!s->held.empty() && s->held.begin()->first <= s->committed + 1) {
        auto node = s->held.extract(s->held.begin());
        const bool next = node.key() == s->committed + 1;
        if (next) s->committed = node.key();
        s->hooks.release(node.key(), node.mapped(), next);
      }
      if (s->held.empty()) {
        s->misses = 0;
        return;
      }
      arm(s);
    }

    static void arm(const std::shared_ptr<State>& s) {
      if (s->armed || s->filling) return;
      s->armed = true;
      s->timer.expires_after(s->limits.gap);
      s->timer.async_wait([w = std::weak_ptr<State>(s)](const boost::system::error_code& ec) {
        auto s = w.lock();
        if (ec || !s) return;
        s->armed = false;
        if (!s->paused && !s->held.empty()) fill(s);
      });
    }

    static void fill(const std::shared_ptr<State>& s) {
      if (s->filling) return;
      s->filling = true;
      s->behind = false;
      if (s->hooks.on_fill) s->hooks.on_fill();
      const uint64_t after = s->committed;
      // The answer comes on a store thread: the state is touched (and may be
      // freed) only on its loop.
      s->store.read_after(s->key, after, s->limits.page,
                          [w = std::weak_ptr<State>(s), after, &loops = s->loops,
                           loop = s->loop](Result<std::vector<StoredMessage>> r) {
                            loops.run_on(loop, [w, after, r = std::move(r)]() mutable {
                              if (auto s = w.lock()) on_filled(s, after, std::move(r));
                            });
                          });
    }

    static void on_filled(const std::shared_ptr<State>& s, uint64_t after,
                          Result<std::vector<StoredMessage>> r) {
      s->filling = false;
      if (!r) {
        if (!s->held.empty()) arm(s);  // the store is down: try again later
        return;
      }
      auto& msgs = *r;
      if (s->committed == after && !msgs.empty() && msgs.front().seq > after + 1) {
        s->hooks.passed_over(after + 1, msgs.front().seq - 1);  // trimmed before it was read
        s->committed = msgs.front().seq - 1;
      }
      for (auto& m : msgs) {
        if (m.seq <= s->committed || s->held.contains(m.seq)) continue;
        const uint64_t seq = m.seq;
        s->held.emplace(seq, s->hooks.from_store(m));
      }
      const uint64_t before = s->committed;
      if (!s->paused) release(s);
      if (msgs.size() == s->limits.page) return fill(s);  // more may follow
      if (s->paused || s->held.empty() || s->committed != before) return;
      if (++s->misses >= 3 && msgs.empty()) {
        // Three reads found nothing below what is held: the store lost it.
        const uint64_t to = s->held.begin()->first - 1;
        s->hooks.passed_over(s->committed + 1, to);
        s->committed = to;
        release(s);
      }
    }
  };

  std::shared_ptr<State> s_;
};

}  // namespace parley::store
