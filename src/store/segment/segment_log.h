// SegmentLog: the embedded store's log for topic partitions, built for appending
// (docs/architecture.md "The segment log" says why it is written here and not
// taken from a library). Each partition is a folder of segment files written
// sequentially (segment_format.h): an event is appended at the end of its
// partition's newest segment and removed by retention with the whole segment it
// is in, so nothing is ever rewritten, unlike an LSM tree's compactions.
//
// Writes ride the embedded store's group commit (group_committer.h): the
// committer's writer thread stages each append of a batch here (stage), and once
// the batch's RocksDB part is written, commit() makes ONE write per partition the
// batch touched, then, with `sync`, one fdatasync per such partition, and only then
// shows the new records to readers. A segment is sealed (fdatasync'd, its index
// written) once it holds segment_bytes, or history_slack(limit) records and
// segment_bytes / 64, and
// deleted whole once every record in it is older than the history limit keeps
// (retention by count; retention by age reaches the store as a count too, see
// events/partition.cc limit_for). Creating and deleting segment files fsyncs the
// partition's folder, creating a partition's folder fsyncs its parent.
//
// Reads (recover, read_after, read_before) run on the store's reader threads: they
// copy what they need of a segment under the partition's lock, open its file, and
// read it without the lock (an open file survives its deletion by retention). A
// partition is loaded from disk at its first use: the index files of its sealed
// segments, and a scan of its newest segment, which cuts a torn tail (the first
// record that is short or fails its checksum, and everything after it).
//
// Dedupe: recover() returns the (from, id) of every record with ts_ms >= the
// cutoff, read from the newest segments back to the first one wholly older than
// the cutoff. There are no separate dedupe records: an id whose event retention
// has deleted is no longer recovered (a topic's retention must cover its dedupe
// window to dedupe across restarts, docs/operations.md).
//
// Threading: stage/commit/discard/reset/evict_idle on the committer's writer
// thread only; recover/read_* on any thread (they block: never on a loop).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "store/segment/segment_format.h"
#include "store/store.h"

namespace parley::store::segment {

struct SegmentLogOptions {
  std::string dir;                       // created when missing
  bool sync = false;                     // fdatasync every partition a batch wrote
  uint64_t segment_bytes = 16ull << 20;  // a segment is sealed past this size
  uint32_t index_every_bytes = 32 << 10; // one sparse index entry per this many bytes
  int64_t idle_ms = 120'000;             // an unwritten partition's file is closed after this
  // A partition found damaged past its torn tail (any thread): its folder and what failed.
  std::function<void(const std::string& dir, const std::string& what)> on_damage;
};

class SegmentLog {
 public:
  static Result<std::unique_ptr<SegmentLog>> open(const SegmentLogOptions& opts);
  ~SegmentLog();
  SegmentLog(const SegmentLog&) = delete;
  SegmentLog& operator=(const SegmentLog&) = delete;

  // --- The committer's writer thread -------------------------------------
  enum class Staged {
    kOk,        // in the batch
    kRejected,  // this append alone fails with `why` (a stale seq, a damaged partition)
    kFailed,    // the store must fail (`why`: an I/O error)
  };
  Staged stage(const AppendRequest& req, int64_t now_ms, Status& why);
  bool has_staged() const { return !touched_.empty(); }
  // Writes what was staged (see above). Error: the batch failed; nothing more is
  // written until reset() succeeds.
  Status commit(int64_t now_ms);
  // Forgets what was staged: the batch failed before reaching this log.
  void discard();
  // After a failure: every partition is read back from disk at its next use (its
  // torn tail cut). Error while the folder cannot be written.
  Status reset();
  // Closes the files of partitions not written for idle_ms.
  void evict_idle(int64_t now_ms);

  // --- Any thread (blocking) ---------------------------------------------
  // last_seq and the dedupe entries from the cutoff (not collapsed per id); with
  // `hash`, as ChannelRecovery::marks (read record by record: no strings kept).
  Result<ChannelRecovery> recover(const ChannelId& key, int64_t dedupe_cutoff_ms,
                                  KeyHashFn hash = nullptr);
  Result<std::vector<StoredMessage>> read_after(const ChannelId& key, uint64_t after,
                                                uint32_t limit);
  Result<std::vector<StoredMessage>> read_before(const ChannelId& key, uint64_t before,
                                                 uint32_t limit);

  // Torn tails cut since open (each logged).
  uint64_t torn_tails() const { return torn_.load(std::memory_order_relaxed); }
  // The folder of `key`'s segments (tests damage files in it).
  std::string partition_dir(const ChannelId& key) const;

 private:
  struct Part;
  explicit SegmentLog(const SegmentLogOptions& opts);

  Part& part(const ChannelId& key);
  // Loads `p` from disk unless it is; error when it holds damage past its tail.
  Status ensure_loaded(Part& p);
  Status load_locked(Part& p);
  // Reads and checks one whole segment file (from scratch) into `m`; `cut`: where
  // a newest segment's valid records end, when they end before the file does.
  Status scan_segment(const std::string& path, SegmentMeta& m, bool newest, uint64_t& valid_end);
  // Writer: writes p's staged bytes; creates its segment file first when needed.
  Status write_staged(Part& p);
  Status seal(Part& p);
  // Writer: deletes the sealed segments retention lets go.
  Status trim(Part& p);
  // Reads the records with offset in [from, until) of the file region [pos, end)
  // of segment file `fd` (`path`), at most `max`, into `out`.
  Status scan_range(int fd, uint64_t pos, uint64_t end, uint64_t from, uint64_t until, size_t max,
                    std::vector<StoredMessage>& out, const std::string& path);
  // recover()'s reading with a hash: the marks of one segment file's records
  // (up to `end`) with an id and ts_ms >= the cutoff, appended to `out`.
  Status mark_range(int fd, uint64_t end, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                    std::vector<DedupeMark>& out, const std::string& path);
  void mark_damaged(Part& p, const std::string& what);

  const SegmentLogOptions opts_;
  mutable std::shared_mutex map_mu_;
  std::unordered_map<std::string, std::unique_ptr<Part>> parts_;  // key: ChannelId::key()
  std::atomic<uint64_t> torn_{0};

  // Writer thread only.
  std::vector<Part*> touched_;  // partitions with staged bytes, in first-staged order
  std::string scratch_;
  int64_t next_evict_ms_ = 0;
};

}  // namespace parley::store::segment
