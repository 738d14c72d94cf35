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
// is durable per the fsync setting.
//
// Internal header: the server uses open_embedded_store() from store.h; tests use the
// extra hooks here.
#pragma once

#include <memory>

#include "store/store.h"

namespace rocksdb {
class DB;
class Env;
}  // namespace rocksdb

namespace parley::store {

class DedupeExpiryFilter;
class GroupCommitter;
class ReaderPool;

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
  void append(AppendRequest req, AppendDone done) override;
  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) override;
  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                   ReadDone done) override;
  void flush() override;
  size_t pending() const override;

  // The blocking halves, run by the reader pool (and by tests). Each checks that
  // it is not on an event loop (blocking_check.h).
  Result<ChannelRecovery> recover_now(const ChannelKey& key, int64_t dedupe_cutoff_ms);
  Result<std::vector<StoredMessage>> read_after_now(const ChannelKey& key, uint64_t after,
                                                    uint32_t limit);
  Result<std::vector<StoredMessage>> read_before_now(const ChannelKey& key, uint64_t before,
                                                     uint32_t limit);

  // Blocking: flushes the memtable and compacts everything, which runs the dedupe
  // expiry filter over all records. For tests and operator tooling.
  Status compact();

 private:
  EmbeddedStore(std::unique_ptr<DedupeExpiryFilter> filter, std::unique_ptr<rocksdb::DB> db,
                const EmbeddedOptions& opts);

  // Declaration order is destruction order reversed: the committer drains into the
  // DB, and RocksDB keeps a raw pointer to the filter until it closes.
  std::unique_ptr<DedupeExpiryFilter> filter_;
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<ReaderPool> readers_;  // stopped first: its tasks read db_
};

}  // namespace parley::store
