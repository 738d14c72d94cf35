// EmbeddedStore: the durable Store on a local RocksDB (the default store).
//
// Layout of records: record_codec.h. Writes: GroupCommitter (one writer thread,
// group commit, trimming, failure). Expired dedupe entries: DedupeExpiryFilter at
// compaction, and recover() skips and deletes the ones it meets.
//
// Threading: any thread. recover() and the reads are posted to the store's reader
// pool (ReaderPool) and complete there; appends go through the committer's queue
// and complete on its writer thread. Nothing here touches RocksDB on the caller's
// thread. Reads see a message once its batch is written, which is never before it
// is durable per the fsync setting. The database may be replaced while the server runs (a store opened
// read-only on a full disk reopens for writing once there is space; a database
// stopped by a fatal error is reopened): that happens on the committer's writer
// thread under db_mu_ held exclusively, and every read holds it shared.
//
// Faults (docs/operations.md): a failed write makes the committer refuse appends and
// retry recovery every second; a start on a disk too full to open for writing opens
// read-only; a start whose recovery meets a damaged WAL record drops it and what
// follows (point-in-time recovery) and keeps the channels written from there on
// unavailable (listed in StoreStateFile) until a start with
// EmbeddedOptions::accept_data_loss, which bumps the epoch and raises seqs past the
// ceiling kept in StoreStateFile; other damage at start refuses unless
// accept_data_loss.
//
// Internal header: the server uses open_embedded_store() from store.h; tests use the
// extra hooks here.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "store/store.h"

namespace rocksdb {
class DB;
class Env;
class EventListener;
class Logger;
class Status;
}  // namespace rocksdb

namespace parley::store {

namespace segment {
class SegmentLog;
}

class DedupeExpiryFilter;
class GroupCommitter;
class ReaderPool;
class StoreStateFile;

class EmbeddedStore final : public Store {
 public:
  // `env` (tests: fault injection) must outlive the store; nullptr is the default.
  static Result<std::unique_ptr<EmbeddedStore>> open(const EmbeddedOptions& opts,
                                                     rocksdb::Env* env = nullptr);
  // Completes every queued append, then closes the database.
  ~EmbeddedStore() override;

  // Contract beyond store.h: appends of `key` submitted before recover() must have
  // completed (it reads what is written, and deletes expired dedupe records).
  void recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) override;
  // A partition in the segment log: its ids hashed as they are read.
  void recover_marks(const ChannelKey& key, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                     RecoverDone done) override;
  void append(AppendRequest req, AppendDone done) override;
  void append_many(std::vector<std::pair<AppendRequest, AppendDone>> reqs) override;
  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) override;
  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                   ReadDone done) override;
  void flush() override;
  size_t pending() const override;
  StoreHealth health() const override;

  // The blocking halves, run by the reader pool (and by tests). Each checks that
  // it is not on an event loop (blocking_check.h).
  // With `hash`: the ids as ChannelRecovery::marks (Store::recover_marks).
  Result<ChannelRecovery> recover_now(const ChannelKey& key, int64_t dedupe_cutoff_ms,
                                      KeyHashFn hash = nullptr);
  Result<std::vector<StoredMessage>> read_after_now(const ChannelKey& key, uint64_t after,
                                                    uint32_t limit);
  Result<std::vector<StoredMessage>> read_before_now(const ChannelKey& key, uint64_t before,
                                                     uint32_t limit);

  // Blocking: flushes the memtable and compacts everything, which runs the dedupe
  // expiry filter over all records. For tests and operator tooling.
  Status compact();
  // Channels whose seq range the writer holds in memory (idle ones are forgotten).
  size_t channels_tracked() const;

 private:
  EmbeddedStore(const EmbeddedOptions& opts, rocksdb::Env* env);

  // Writer thread (GroupCommitter::Hooks::try_recover).
  Status try_recover_writes();
  // Writer thread, db_mu_ held exclusively: replaces db_ by a fresh read-write open,
  // or failing that a read-only one (reads go on). Error: still not writable.
  Status reopen_locked();
  // An error for a caller of a read; a corrupt record is logged once per channel.
  Error read_failed(const ChannelKey& key, const std::string& what);
  // Reader thread, once after open: the table files' checksums within opts_.verify_bytes.
  void verify_at_start();
 public:
  // Any thread: a checksum failed in `file` (a name, or "" when RocksDB did not
  // say which). Logged once per file; counted in health().
  void note_damage(const std::string& file, const std::string& what,
                   const std::vector<std::string>& channels = {});

 private:

  const EmbeddedOptions opts_;
  rocksdb::Env* const env_;
  // Declaration order is destruction order reversed: the committer drains into the
  // DB, and RocksDB keeps raw pointers to the filter and logger until it closes.
  std::unique_ptr<DedupeExpiryFilter> filter_;
  std::shared_ptr<rocksdb::Logger> logger_;
  std::unique_ptr<StoreStateFile> state_;
  bool state_saved_ = false;    // writer thread: clean = false is on disk
  uint32_t epoch_ = 1;          // constant after open
  uint64_t loss_floor_ = 0;     // constant after open
  bool loss_accepted_ = false;  // constant after open

  mutable std::shared_mutex db_mu_;
  std::unique_ptr<rocksdb::DB> db_;  // guarded by db_mu_
  bool read_only_ = false;           // guarded by db_mu_

  std::atomic<uint64_t> unreadable_{0};
  std::mutex unreadable_mu_;
  std::unordered_set<std::string> unreadable_logged_;  // channels, bounded
  std::shared_ptr<rocksdb::EventListener> damage_listener_;  // RocksDB's background errors
  std::atomic<uint32_t> damaged_count_{0};
  std::mutex damage_mu_;
  std::unordered_set<std::string> damaged_files_;  // bounded like unreadable_logged_

  // "tenant/channel" of the channels a damaged WAL record made unavailable
  // (StoreStateFile's `damaged`); constant after open.
  std::unordered_set<std::string> unavailable_;
  bool unavailable(const ChannelKey& key) const;

  // Topic partitions, when kept in the segment log (embedded_store_log.cc); also
  // opened under topic_log = rocksdb when dir/segments exists, so that offsets
  // continue above what it holds. Destroyed after the committer, which writes it.
  std::unique_ptr<segment::SegmentLog> log_;
  Status open_log();
  bool in_log(const ChannelKey& key) const;
  // recover_now's part for the segment log: `out` (RocksDB's answer) gets the log's
  // last offset (the higher one wins) and, for a partition kept there, its dedupe ids
  // (as marks, with `hash`).
  Status recover_from_log(const ChannelKey& key, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                          ChannelRecovery& out);

  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<ReaderPool> readers_;  // stopped first: its tasks read db_
};

}  // namespace parley::store
