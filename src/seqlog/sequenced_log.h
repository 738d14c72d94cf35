// SequencedLog: one sequenced, deduplicated log kept by the node that owns it:
// a channel's messages (hub::Shard) or a topic partition's events
// (events::Partition). It owns the log's order (the last seq handed out and the
// last committed), its dedupe window, the appends in flight and their
// duplicates waiting on them, recovery from the store, and the failure rules.
// The owner keeps what is its own: what an append carries (Pending), how a
// duplicate is answered (Waiter), what a committed entry becomes (Entry), the
// store call and how its completion reaches the owner's loop.
//
// Two ways to number the log, fixed by the store (Store::assigns_seq):
// - The server numbers it (memory, embedded store; one node owns the log):
//   append() hands out last + 1, the window answers a duplicate (at once when
//   its original is committed, at the original's completion when it is still in
//   flight), the store echoes the seq and completes in order; a failed append
//   fails the log, every append behind it fails too (the store refuses them),
//   and the log is recovered from the store once none is in flight, so no seq
//   gap is ever handed out.
// - The store numbers it (valkey; several nodes append): append() sends seq 0,
//   the store dedupes and answers with the seq (or the original's, dup); this
//   node's answers and the broker's feed of every node's commits are merged by
//   seq in a LogFollower (held until contiguous, a gap older than Options::gap
//   read from the store). A failure marks nothing: the store assigned no seq,
//   or it did and the entry arrives through the feed like any other.
//
// Not thread-safe: owned by one loop (the channel's shard, the topic's loop);
// every method and hook runs there. Not movable: the follower holds its
// committed counter.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/status.h"
#include "runtime/loop_group.h"
#include "store/dedupe_key.h"
#include "store/dedupe_table.h"
#include "store/log_follower.h"
#include "store/store.h"

namespace parley::seqlog {

// The follower's knobs, one set for channels and topics (config: the [valkey]
// keys fanout_gap_ms, fanout_max_held, fanout_fill_page).
struct Options {
  std::chrono::milliseconds gap{50};  // a gap open this long is read from the store
  uint64_t max_held = 4096;           // entries held ahead of committed + 1; later ones are read
  uint32_t fill_page = 512;           // entries per gap-fill read
};

// Rebuilds a dedupe window from a recovery's entries (oldest first, so that
// each lands in the time bucket of its ts).
void refill_dedupe(store::DedupeTable& table, std::vector<store::DedupeEntry>& entries);

template <typename Pending, typename Waiter, typename Entry>
class SequencedLog {
 public:
  using Follower = store::LogFollower<Entry>;

  // A log the store numbers: what the owner does with the follower's entries.
  struct FollowHooks {
    // An entry leaves in seq order; `next`: committed moved to it (deliver it),
    // otherwise only what rides with it is left (its seq was delivered already).
    std::function<void(uint64_t seq, Entry& e, bool next)> release;
    // An entry read back from the store (a gap fill, or a pushed commit).
    std::function<Entry(store::StoredMessage& m)> from_store;
    // Seqs from..to are passed over: the store no longer holds them.
    std::function<void(uint64_t from, uint64_t to)> passed_over;
    // May be empty: a fill starts; an entry waits behind a gap (metrics).
    std::function<void()> on_fill;
    std::function<void()> ahead;
    // May be empty: this node's own entry for a seq whose pushed entry is held
    // already: move what rides on `mine` onto `held`.
    std::function<void(Entry& held, Entry& mine)> merge;
  };

  // An append's completion, for the owner to act on and answer.
  struct Completion {
    enum Kind {
      kCommitted,  // server numbering: committed at outcome->seq; deliver it
      kAssigned,   // store numbering: a new seq; answer, then take() the entry
      kAnswered,   // a failure or a duplicate: only the answers are left
    };
    Kind kind;
    store::AppendOutcome outcome;  // the append's own answer
    Pending pending;
    std::vector<Waiter> waiters;   // duplicates that waited for it: for_waiters()
    store::AppendOutcome for_waiters() const {
      if (!outcome) return outcome;
      return store::Appended{outcome->seq, true};
    }
  };

  enum class Seen { kNew, kDuplicate, kWaits };

  SequencedLog(bool store_numbers, int64_t dedupe_window_ms)
      : store_numbers_(store_numbers), window_ms_(dedupe_window_ms), dedupe_(dedupe_window_ms) {}
  SequencedLog(const SequencedLog&) = delete;
  SequencedLog& operator=(const SequencedLog&) = delete;

  bool store_numbers() const { return store_numbers_; }
  uint64_t last() const { return last_; }            // highest seq handed out (or heard of)
  uint64_t committed() const { return committed_; }  // highest seq committed and delivered
  size_t inflight() const { return inflight_.size(); }
  // The newest append in flight, for what should ride on it; null when none.
  Pending* newest() { return inflight_.empty() ? nullptr : &inflight_.back().pending; }

  // ---- Recovery -------------------------------------------------------------
  // ready(): recovered and not failed; appends may go. needs_recovery(): not
  // ready, no recovery running and nothing in flight (a failed log waits for its
  // appends in flight to be answered first).
  bool ready() const { return state_ == kReady; }
  bool recovering() const { return state_ == kRecovering; }
  bool needs_recovery() const {
    return (state_ == kUnloaded || state_ == kFailed) && inflight_.empty();
  }
  // Store::recover's dedupe cutoff for a recovery now.
  int64_t dedupe_cutoff(int64_t now_ms) const { return now_ms - window_ms_; }
  // A recovery starts (the owner calls Store::recover): the follower holds what
  // arrives meanwhile without releasing it.
  void begin_recovery() {
    PARLEY_CHECK(needs_recovery());
    state_ = kRecovering;
    if (follower_) follower_->pause();
  }
  // What the store holds: the counters (never below what this node committed:
  // after a start that accepted data loss the store's floor may jump, and a seq
  // that may have been acknowledged is never handed out again), the window, and
  // the follower's held entries past the counter go out (released through its
  // hooks before this returns). Returns the committed seq the store held.
  uint64_t recovered(store::ChannelRecovery& rec) {
    PARLEY_CHECK(state_ == kRecovering);
    state_ = kReady;
    last_ = committed_ = std::max(committed_, rec.last_seq);
    const uint64_t cut = committed_;
    dedupe_ = store::DedupeTable(window_ms_);
    waiters_.clear();
    refill_dedupe(dedupe_, rec.dedupe);
    if (follower_) follower_->resume();
    return cut;
  }
  void recovery_failed() {
    PARLEY_CHECK(state_ == kRecovering);
    state_ = kFailed;
  }

  // ---- Appends --------------------------------------------------------------
  // Server numbering: forgets ids older than the window (not those in flight).
  void expire(int64_t now_ms) { dedupe_.expire(now_ms, committed_ + 1); }
  // Server numbering: whether `key` was appended within the window. kDuplicate:
  // `seq` is the original's, committed (answer it as a dup now). kWaits: the
  // original is in flight; make_waiter()'s waiter is answered at its completion.
  template <typename MakeWaiter>
  Seen seen(const store::DedupeKey& key, uint64_t& seq, MakeWaiter&& make_waiter) {
    auto found = dedupe_.find(key);
    if (!found) return Seen::kNew;
    seq = *found;
    if (seq <= committed_) return Seen::kDuplicate;
    waiters_[seq].push_back(make_waiter());
    return Seen::kWaits;
  }
  // Server numbering: the append in flight with `seq`, or null (an owner that
  // keeps its own window compares what its Pending holds).
  Pending* inflight_at(uint64_t seq) {
    if (store_numbers_ || inflight_.empty() || seq < inflight_.front().seq) return nullptr;
    const uint64_t i = seq - inflight_.front().seq;
    if (i >= inflight_.size() || inflight_[i].seq != seq) return nullptr;
    return &inflight_[i].pending;
  }
  // Server numbering: `w` is answered at the completion of the append in flight
  // with `seq`, as a duplicate seen() found waiting on it is.
  void wait_for(uint64_t seq, Waiter w) { waiters_[seq].push_back(std::move(w)); }
  // The seq the next append gets (server numbering), for what it encodes.
  uint64_t next_seq() const { return last_ + 1; }
  // An append goes to the store; the owner sends it with the returned seq (0:
  // the store numbers it). `key` (may be empty) enters the window as of ts_ms.
  uint64_t append(store::DedupeKey key, int64_t ts_ms, Pending pending) {
    PARLEY_CHECK(ready());
    if (store_numbers_) {
      inflight_.push_back(InFlight{0, {}, std::move(pending)});
      return 0;
    }
    const uint64_t seq = ++last_;
    if (!key.empty()) dedupe_.insert(key, seq, ts_ms);
    inflight_.push_back(InFlight{seq, std::move(key), std::move(pending)});
    return seq;
  }
  // The store's answer to the oldest append in flight (the store completes a
  // log's appends in submission order), on the owner's loop.
  Completion complete(store::AppendOutcome out) {
    PARLEY_CHECK(!inflight_.empty());
    InFlight f = std::move(inflight_.front());
    inflight_.pop_front();
    if (store_numbers_) {
      const bool fresh = out && !out->dup;
      if (fresh) last_ = std::max(last_, out->seq);
      return Completion{fresh ? Completion::kAssigned : Completion::kAnswered, std::move(out),
                        std::move(f.pending), {}};
    }
    std::vector<Waiter> waiters;
    if (!waiters_.empty()) {
      if (auto w = waiters_.find(f.seq); w != waiters_.end()) {
        waiters = std::move(w->second);
        waiters_.erase(w);
      }
    }
    if (out && state_ == kReady) {
      // This store takes the log's seq and completes in order: it echoes it.
      PARLEY_CHECK(out->seq == f.seq);
      committed_ = f.seq;
      return Completion{Completion::kCommitted, store::Appended{f.seq, false}, std::move(f.pending),
                        std::move(waiters)};
    }
    // Nothing after this seq can be written without a gap: the store refuses
    // every later append (a success after a failure counts as one too), and the
    // log is recovered once nothing is in flight.
    state_ = kFailed;
    if (!f.key.empty()) dedupe_.erase(f.key);
    if (inflight_.empty()) last_ = committed_;
    store::AppendOutcome err =
        out ? store::AppendOutcome{Error{ErrorCode::kUnavailable, "store unavailable", 1000}}
            : std::move(out);
    return Completion{Completion::kAnswered, std::move(err), std::move(f.pending),
                      std::move(waiters)};
  }

  // ---- Store numbering: following the log ------------------------------------
  // Gives the log its follower (store numbering only), paused until recovered.
  void follow(runtime::LoopGroup& loops, unsigned loop, store::Store& store, store::ChannelId id,
              const Options& opts, FollowHooks hooks) {
    PARLEY_CHECK(store_numbers_ && !follower_);
    hooks_ = std::move(hooks);
    typename Follower::Hooks fh;
    fh.release = [this](uint64_t seq, Entry& e, bool next) {
      if (next) last_ = std::max(last_, seq);
      hooks_.release(seq, e, next);
    };
    fh.from_store = [this](store::StoredMessage& m) { return hooks_.from_store(m); };
    fh.passed_over = [this](uint64_t from, uint64_t to) { hooks_.passed_over(from, to); };
    if (hooks_.on_fill) fh.on_fill = [this] { hooks_.on_fill(); };
    follower_ = std::make_unique<Follower>(
        loops, loop, store, std::move(id), committed_,
        typename Follower::Limits{opts.gap, opts.max_held, opts.fill_page}, std::move(fh));
    follower_->pause();
  }
  // Nothing held and no fill in flight (the owner may unload the log).
  bool idle() const { return !follower_ || follower_->idle(); }
  // This node's own append, which the store numbered `seq` (Completion
  // kAssigned): delivered in seq order with every node's.
  void take(uint64_t seq, Entry e) {
    if (seq <= committed_) {
      // Delivered already (its push came first): only what rides with it is left.
      hooks_.release(seq, e, false);
      return;
    }
    if (Entry* was = follower_->held(seq)) {
      // The push came first and is waiting: this node's entry adds what rides on it.
      if (hooks_.merge) hooks_.merge(*was, e);
      return;
    }
    if (seq != committed_ + 1 && hooks_.ahead) hooks_.ahead();
    follower_->keep(seq, std::move(e));
  }
  // A commit the broker's feed pushed (any node's, maybe twice, maybe never).
  void on_feed(store::StoredMessage& m) {
    if (!follower_ || !follower_->wants(m.seq)) return;
    const uint64_t seq = m.seq;
    last_ = std::max(last_, seq);
    if (seq != committed_ + 1 && hooks_.ahead) hooks_.ahead();
    follower_->hold(seq, hooks_.from_store(m));
  }
  // The feed's subscription was (re)made: read what may have been missed (not
  // while recovering: the recovery reads the counter).
  void on_resync() {
    if (follower_) follower_->fill();
  }

 private:
  enum State { kUnloaded, kRecovering, kReady, kFailed };
  struct InFlight {
    uint64_t seq = 0;  // 0: the store numbers it
    store::DedupeKey key;
    Pending pending;
  };

  const bool store_numbers_;
  const int64_t window_ms_;
  State state_ = kUnloaded;
  uint64_t last_ = 0;
  uint64_t committed_ = 0;
  // (from, id) -> seq of the window and of every append in flight (seq >
  // committed_: a duplicate of one waits in waiters_ for it to complete).
  store::DedupeTable dedupe_;
  std::unordered_map<uint64_t, std::vector<Waiter>> waiters_;  // by the original's seq
  std::deque<InFlight> inflight_;  // in seq order (submission order)
  std::unique_ptr<Follower> follower_;
  FollowHooks hooks_;
};

}  // namespace parley::seqlog
