// GroupCommitter: the embedded store's write path. Appends queue up while the
// previous write is in progress; one writer thread then writes everything queued (up
// to max_batch) as ONE RocksDB WriteBatch, so a single WAL write (and, with
// FsyncMode::kAlways, a single fsync) covers many messages.
//
// Threading: submit(), flush() and pending() are called from any thread and only
// touch the queue under mu_. Everything else (the per-channel trim state, the failed
// flag, building and writing batches, running done callbacks) belongs to the writer
// thread. The queue is bounded by the caller: the hub limits appends in flight.
//
// Ordering: one writer, FIFO queue, callbacks run in queue order, so appends
// complete in submission order (globally, hence per channel).
//
// The segment log: a batch's appends to topic partitions (when the store keeps
// them there) are staged in it beside the WriteBatch and written after it, in the
// same round: one group commit, one writer thread, one failure state for both.
//
// Waking the writer: at low rates every append is its own group commit, so the
// writer sleeps and is woken once per append. It sleeps on a futex word (bell_)
// rather than a condition variable: glibc's condvar re-takes its mutex as
// contended on wake-up, so the writer's next unlock was one more futex syscall per
// append (issue 9's strace of a durable pub). Not std::atomic::wait: the writer
// also wakes on a timeout (idle eviction, recovery retries), which it has not.
//
// Failure: when a write fails, that batch and every later append fail with
// kUnavailable (retryable, no path in the text); nothing is written after a failed
// batch, so no seq gap can reach the disk. The committer then REFUSES: every append
// fails at once while, every kRetryMs, the writer thread asks the store to recover
// (Hooks::try_recover: RocksDB's Resume, or a reopen). Once it succeeds the writer
// forgets what it knew of each channel (the failed batch may or may not be in the
// database) and takes appends again; the hub reloads a failed channel from the store
// before it sequences anything new on it, so seqs continue from what was written.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/store.h"
#include "store/store_refusal.h"

namespace rocksdb {
class DB;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace parley::store {

namespace segment {
class SegmentLog;
}

class GroupCommitter {
 public:
  static constexpr int kRetryMs = 1000;

  // Called on the writer thread only.
  struct Hooks {
    // The database to write to (the store may replace it in try_recover).
    std::function<rocksdb::DB*()> db;
    // Before a batch whose highest seq is `max_seq` is written (the seq ceiling).
    std::function<Status(uint64_t max_seq)> reserve;
    // While refusing: make the store writable again. Ok: appends are taken again.
    std::function<Status()> try_recover;
    // Appends of the channels `in_log` names go to this segment log instead of the
    // batch (topic partitions, store/segment/segment_log.h): staged with the rest,
    // written right after the WriteBatch, completed with it. Null: none.
    segment::SegmentLog* log = nullptr;
    std::function<bool(const ChannelKey&)> in_log;
  };

  // Starts the writer thread; refuses from the start when `refusing` is set (a store
  // that could open only read-only).
  // A channel not written for `channel_idle_ms` leaves the writer's map (checked
  // every idle/2, the writer waking up for it when nothing else comes).
  GroupCommitter(Hooks hooks, FsyncMode fsync, size_t max_batch,
                 std::optional<Refusal> refusing = std::nullopt,
                 int64_t channel_idle_ms = 120'000);
  // Completes everything queued, then stops the writer thread.
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void submit(AppendRequest req, AppendDone done);
  // submit() of each, in order, under one lock and with at most one wake-up.
  void submit_many(std::vector<std::pair<AppendRequest, AppendDone>> reqs);
  // Blocks until every append submitted before the call has completed. Must not be
  // called from a done callback (it would wait for itself).
  void flush();
  size_t pending() const;
  // Set while the store refuses appends. Any thread.
  std::optional<Refusal> refusal() const;
  // Channels whose seq range the writer holds (written in the last channel_idle_ms).
  size_t channels_tracked() const { return tracked_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    AppendRequest req;
    AppendDone done;
    Status status;  // set by the writer thread
  };
  // What the writer knows of a channel's stored messages, for trimming and for
  // rejecting stale seqs. Loaded from the DB on the channel's first append.
  struct ChannelState {
    struct Gap {
      uint64_t first, last;  // seqs inside [oldest_seq, last_seq] that hold no message
    };
    uint64_t oldest_seq = 0;  // 0: no message stored
    uint64_t last_seq = 0;
    int64_t last_write_ms = 0;  // steady clock
    // Oldest first; empty unless the channel jumped its seqs (a power loss with
    // fsync = never, an accepted data loss: record_codec.h "gap"). Retention counts
    // the messages held, last - oldest + 1 - gap_seqs, not the seq distance: a
    // quiet channel continuing 5,000,000 seqs above its last one kept none of its
    // history at its next trim.
    std::vector<Gap> gaps;
    uint64_t gap_seqs = 0;
  };

  void run();
  // Writer thread, under `lock`: sleeps until there is work or stop_, or for at
  // most timeout_ms (< 0: no limit).
  void wait_for_work(std::unique_lock<std::mutex>& lock, int64_t timeout_ms);
  // Any thread, under mu_: true when the caller must ring() after unlocking.
  bool take_sleeper();
  void ring();
  void commit(std::vector<Pending>& batch);
  // Enters the refusing state (logged once per refusal); `text` is the store's error.
  void refuse(const std::string& what, const std::string& text);
  // Writer thread, while refusing: one recovery attempt when it is due.
  void maybe_recover();
  // Adds one append to `wb`; false when the store must fail.
  bool add(Pending& p, rocksdb::WriteBatch& wb);
  ChannelState* channel_state(const std::string& msg_prefix);
  // Trims `ch` (key_buf_ holds its message prefix, `prefix_len` long) to the
  // latest `keep` messages when more than `max_held` are held.
  rocksdb::Status trim(ChannelState& ch, size_t prefix_len, uint64_t keep, uint64_t max_held,
                       rocksdb::WriteBatch& wb);
  // Forgets the channels not written for channel_idle_ms_.
  void evict_idle(int64_t now_ms);

  Hooks hooks_;
  const bool sync_;
  const size_t max_batch_;

  mutable std::mutex mu_;
  std::condition_variable drained_cv_;  // flush() waits for completions
  std::deque<Pending> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  size_t flush_waiters_ = 0;    // callers blocked in flush(): only then is drained_cv_ notified
  bool writer_waiting_ = false;  // the writer sleeps (or is about to) on bell_
  bool stop_ = false;
  // 0 while the writer sleeps; set to 1 (under mu_) by whoever wakes it, before
  // FUTEX_WAKE: a wake that comes before the writer's FUTEX_WAIT finds 1 and
  // returns at once.
  std::atomic<uint32_t> bell_{0};

  // Writer thread only. One small entry (~150 B) per channel written in the last
  // channel_idle_ms_: without eviction every channel ever written stayed here.
  std::unordered_map<std::string, ChannelState> channels_;  // key: message prefix
  // Writer thread only: reused from one group commit to the next (capacity kept,
  // bounded: a large batch's is given back).
  std::vector<Pending> batch_;
  std::unique_ptr<rocksdb::WriteBatch> wb_;
  std::string key_buf_, value_buf_, dkey_buf_;
  std::optional<Error> failed_;       // what appends are told while refusing
  int64_t next_recover_ms_ = 0;       // steady time of the next try_recover
  const int64_t channel_idle_ms_;
  int64_t now_ms_ = 0;                // steady clock, read once per round
  int64_t next_evict_ms_ = 0;
  std::atomic<size_t> tracked_{0};

  mutable std::mutex refusal_mu_;     // refusal_ is read by health() on any thread
  std::optional<Refusal> refusal_;

  std::thread writer_;  // last: started once everything above exists
};

}  // namespace parley::store
