// One partition of a topic: a gap-free log with offsets from 1, stored on the
// Store as the channel (tenant, "<topic>\x1f<p>"): the same interface, records,
// recovery and retention as a channel's history, not a second storage engine.
//
// Its offsets, appends in flight, recovery and failure rules are a
// seqlog::SequencedLog, as a channel's (seqlog/sequenced_log.h: on a store
// shared by several nodes the store numbers the log and the partition follows
// it, watching the partition's feed for its whole life).
//
// Its dedupe window is its own (when the server numbers the log): a
// store::DedupeIndex of fingerprints and offsets, no keys (dedupe_index.h says
// why). An id whose fingerprint is in the window is compared with the append in
// flight at that offset, or, once committed, with the event the store holds there
// (one read); the append waits for that read, and so does every later append of
// the partition, which keeps them in the order they came. Only a retry (or a
// fingerprint collision) costs the read. What waits is bounded: past kMaxHeld
// appends held, an append is answered `backpressure` at once; a read not
// answered within the confirmation deadline answers every held append
// `unavailable` (none of them was stored, so nothing acknowledged is lost and
// none overtakes another), and its late answer is ignored.
//
// Owned by its topic's loop (topic.h): only that loop touches it. It feeds its
// cursors (tails and group members) in offset order with no
// gaps: from a ring of recent events while they keep up, from the store (one page
// at a time, paced by the client's reading) when they are behind it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/broker.h"
#include "common/status.h"
#include "protocol/client_op.h"
#include "metrics/metrics.h"
#include "runtime/inbox.h"
#include "runtime/loop_group.h"
#include "runtime/outbox.h"
#include "events/event_service.h"
#include "seqlog/sequenced_log.h"
#include "store/dedupe_index.h"
#include "store/store.h"
#include "tenant/tenant_config.h"

namespace parley::events {

// Where one event of an emit landed (its offset, as Appended::seq), or why not.
using LandingFn = std::function<void(const store::AppendOutcome&)>;

// A committed event as the topic's processors (leaderboards) see it.
struct CommittedEvent {
  uint32_t p = 0;
  uint64_t off = 0;
  std::string_view type;
  std::string_view body;  // the event's own body (JSON text)
};
using CommitObserver = std::function<void(const CommittedEvent&)>;

class Partition {
 public:
  Partition(unsigned loop, runtime::LoopGroup& loops, store::Store& store,
            store::ChannelId id, std::string topic, uint32_t p, const TopicConfig& cfg,
            metrics::Metrics& metrics, const seqlog::Options& follow, cluster::Broker& broker,
            cluster::FeedListener* listener);
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  // Set by the topic: runs (on this loop) when events were committed, so that
  // the topic can schedule a delivery pass; and for each committed event.
  void set_on_committed(std::function<void(uint64_t off)> fn) { on_committed_ = std::move(fn); }
  void set_observer(CommitObserver fn) { observer_ = std::move(fn); }
  // Where the store's completions of this partition's appends go: the topic's
  // inbox (one drain per store round for all its partitions), which hands each
  // back to on_appended() on this loop in arrival order.
  struct Appended {
    uint32_t part;
    store::AppendOutcome out;
  };
  using AppendInbox = runtime::Inbox<Appended>;
  void set_inbox(AppendInbox* inbox) { inbox_ = inbox; }
  // Where its frames go: the topic's outbox, which carries everything the
  // topic sends a loop (runtime/outbox.h), so they keep their order.
  void set_outbox(runtime::Outbox* out) { out_ = out; }
  // One append completed (in submission order), on this loop.
  void on_appended(store::AppendOutcome out);

  // Recovery: ready() once the store said what it holds. recover() (when
  // needs_recovery()) asks it; `then` runs on this loop either way.
  bool ready() const { return log_.ready(); }
  bool needs_recovery() const { return log_.needs_recovery(); }
  void recover(std::function<void()> then);

  // Offsets: the last acknowledged one, the first kept, and appends in flight.
  uint64_t committed() const { return log_.committed(); }
  // The committed offset the last recovery found: every event after it has been
  // (or will be) given to the observer here, every one up to it has not (a
  // board rebuild replays up to it).
  uint64_t recovered_cut() const { return recovered_cut_; }
  uint64_t earliest() const;
  size_t inflight() const { return log_.inflight(); }

  // Appends one event (ready() must hold) or finds it a duplicate; `fn` runs
  // once, on this loop, when it is acknowledged, found, or failed. The store
  // append goes into `batch`, which the caller hands to Store::append_many once
  // its emit is sequenced (one queueing for the whole emit).
  using StoreBatch = std::vector<std::pair<store::AppendRequest, store::AppendDone>>;
  void append(const std::string& from, protocol::EmitEvent& e, int64_t now_ms, LandingFn fn,
              StoreBatch& batch);

  // Cursors: a reader starting at `next` (earliest() <= next <= committed()+1).
  // `group` is written into its frames (a group member's). Returns its id.
  uint64_t open_cursor(std::weak_ptr<EventSink> sink, uint64_t next, std::string group);
  void close_cursor(uint64_t id);
  // Sends each cursor what it has not had yet (the topic calls it after
  // commits, once per loop iteration or per tick, in a pass's TailScope: one
  // post per loop for the pass).
  void pump();
  size_t cursors() const { return cursors_.size(); }
  // Where the partition lives in the store (a rebuild reads it back).
  const store::ChannelId& store_id() const { return id_; }
  // Replaces the dedupe window's fingerprint (before the first append; tests
  // force collisions with it).
  void set_fingerprint_for_tests(store::DedupeIndex::HashFn fn) { window_.set_hash(fn); }

  // Appends held behind a dedupe confirmation, at most (then `backpressure`),
  // and how long a confirmation read may take (then `unavailable`).
  static constexpr size_t kMaxHeld = 4096;
  static constexpr std::chrono::milliseconds kConfirmDeadline{2000};
  static constexpr int kHeldRetryMs = 100;
  void set_confirm_deadline_for_tests(std::chrono::milliseconds d) { confirm_deadline_ = d; }
  size_t held_appends() const { return held_.size(); }

  // Shared store only (see above): an event some node committed (the broker's
  // feed, which `listener` hears and hands here on this loop), and a
  // (re)established feed subscription (read what may have been missed).
  void on_feed(store::StoredMessage m);
  void on_resync();
  ~Partition();

 private:
  struct Cursor {
    std::weak_ptr<EventSink> sink;
    uint64_t next = 1;
    std::string group;
    bool paced = false;  // a store page is being read or written out
  };
  // An append in flight.
  struct Pending {
    std::string item;   // the event as an `events` frame carries it
    std::string type;   // for the observer
    std::string body;
    LandingFn done;
    store::StoredMessage stored;  // shared store: what was sent (seq from the answer)
    store::DedupeKey key;         // server numbering: (from, id), empty without an id
    uint64_t off = 0;             // server numbering: the offset it was given
  };
  // An append waiting for a dedupe confirmation: its own (the first) or one
  // before it.
  struct Held {
    std::string from;
    protocol::EmitEvent e;
    int64_t now_ms = 0;
    LandingFn fn;
    std::vector<uint64_t> ruled_out;  // offsets read and found to be other events
  };
  using Log = seqlog::SequencedLog<Pending, LandingFn, store::StoredMessage>;

  // Server numbering: appends `e` into `batch`, or answers it (a duplicate of
  // one in flight waits for it). False, with `read_off` the offset to read, when
  // its fingerprint names a committed event not in `ruled_out`: nothing is done.
  bool place(const std::string& from, protocol::EmitEvent& e, int64_t now_ms, LandingFn& fn,
             StoreBatch& batch, const std::vector<uint64_t>& ruled_out, uint64_t& read_off);
  // Reads the event at `off` for the first held append, then drains.
  void confirm(uint64_t off);
  // The confirmation numbered `gen` outlived its deadline: every held append
  // is answered unavailable.
  void confirm_timed_out(uint64_t gen);
  // held_ and the parley_event_dedupe_held gauge together.
  void hold(Held h);
  void unhold_front();
  // Places the held appends in order until one needs a read.
  void drain_held();
  void submit(store::AppendRequest req, StoreBatch& batch);
  // The window from a recovery's entries (in offset order).
  void refill_window(std::vector<store::DedupeMark>& ids);
  // A committed event into the ring of recent ones.
  void push_recent(uint64_t off, std::string item);
  // Shared store: an event committed by any node, in offset order.
  void commit_stored(const store::StoredMessage& m);
  // Shared store: gives the log its follower.
  void follow(const seqlog::Options& opts);
  // The history limit of the append of `off`: `retention`, or fewer when
  // retention_s lets older events go.
  uint32_t limit_for(uint64_t off, int64_t now_ms);
  void pump_one(uint64_t id, Cursor& c);
  // pump_one outside a pass (a paced cursor's next page), a pass of its own.
  void pump_now(uint64_t id, Cursor& c);
  void begin_frame(std::string& f, const Cursor& c) const;
  void read_page(uint64_t id, Cursor& c);

  unsigned loop_;
  runtime::LoopGroup& loops_;
  store::Store& store_;
  cluster::Broker& broker_;
  store::ChannelId id_;
  std::string topic_;
  uint32_t p_;
  const TopicConfig& cfg_;
  uint32_t history_limit_;
  // retention_s (limit_for): (wall ms, first offset appended from then), and the
  // first offset the age bound keeps.
  std::deque<std::pair<int64_t, uint64_t>> age_marks_;
  uint64_t keep_from_ = 1;

  Log log_;
  store::DedupeIndex window_;
  std::vector<uint64_t> candidates_;  // scratch of place()
  std::deque<Held> held_;
  bool confirming_ = false;  // the first held append's read is out
  uint64_t confirm_gen_ = 0;  // numbers the reads: a late answer is not the current one's
  std::chrono::milliseconds confirm_deadline_ = kConfirmDeadline;
  std::unique_ptr<boost::asio::steady_timer> confirm_timer_;  // made on this loop, at first use
  uint64_t recovered_cut_ = 0;
  // The newest committed events, encoded as `events` items.
  struct Recent {
    uint64_t off = 0;
    std::string item;
    int64_t committed_ns = 0;  // for the dispatch stage histogram
  };
  std::deque<Recent> recent_;
  metrics::Metrics& metrics_;
  size_t recent_bytes_ = 0;
  std::unordered_map<uint64_t, Cursor> cursors_;
  uint64_t next_cursor_ = 1;
  std::function<void(uint64_t off)> on_committed_;
  CommitObserver observer_;

  AppendInbox* inbox_ = nullptr;
  runtime::Outbox* out_ = nullptr;
};

}  // namespace parley::events
