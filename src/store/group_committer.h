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
// Failure: when a write fails, that batch and every later append fail with
// kUnavailable; nothing is written after a failed batch, so no seq gap can reach the
// disk. The committer stays failed: operators restart the process, which recovers
// from what was written.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/store.h"

namespace rocksdb {
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace parley::store {

class GroupCommitter {
 public:
  // `db` must outlive this object. Starts the writer thread.
  GroupCommitter(rocksdb::DB* db, FsyncMode fsync, size_t max_batch);
  // Completes everything queued, then stops the writer thread.
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void submit(AppendRequest req, AppendDone done);
  // Blocks until every append submitted before the call has completed. Must not be
  // called from a done callback (it would wait for itself).
  void flush();
  size_t pending() const;

 private:
  struct Pending {
    AppendRequest req;
    AppendDone done;
    Status status;  // set by the writer thread
  };
  // What the writer knows of a channel's stored messages, for trimming and for
  // rejecting stale seqs. Loaded from the DB on the channel's first append.
  struct ChannelState {
    uint64_t oldest_seq = 0;  // 0: no message stored
    uint64_t last_seq = 0;
  };

  void run();
  void commit(std::vector<Pending>& batch);
  // Adds one append to `wb`; false when the store must fail.
  bool add(Pending& p, rocksdb::WriteBatch& wb);
  ChannelState* channel_state(const std::string& msg_prefix);

  rocksdb::DB* const db_;
  const bool sync_;
  const size_t max_batch_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // the writer waits for work
  std::condition_variable drained_cv_;  // flush() waits for completions
  std::deque<Pending> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  bool writer_waiting_ = false;
  bool stop_ = false;

  // Writer thread only. One small entry per channel written since open: bounded
  // by the number of channels, like the hub's own per-channel state.
  std::unordered_map<std::string, ChannelState> channels_;  // key: message prefix
  std::optional<Error> failed_;

  std::thread writer_;  // last: started once everything above exists
};

}  // namespace parley::store
