// EmbeddedStore: the durable Store on a local RocksDB (the default store).
//
// Layout of records: record_codec.h. Writes: GroupCommitter (one writer thread,
// group commit, trimming, failure). Expired dedupe entries: DedupeExpiryFilter at
// compaction, and recover() skips and deletes the ones it meets.
//
// Threading: any thread. recover() and the reads run on the caller's thread against
// RocksDB (itself thread-safe); appends go through the committer's queue. Reads see
// a message once its batch is written, which is never before it is durable per the
// fsync setting.
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

class EmbeddedStore final : public Store {
 public:
  // `env` (tests: fault injection) must outlive the store; nullptr is the default.
  static Result<std::unique_ptr<EmbeddedStore>> open(const EmbeddedOptions& opts,
                                                     rocksdb::Env* env = nullptr);
  // Completes every queued append, then closes the database.
  ~EmbeddedStore() override;

  // Contract beyond store.h: appends of `key` submitted before recover() must have
  // completed (it reads what is written, and deletes expired dedupe records).
  Result<ChannelRecovery> recover(const ChannelKey& key, int64_t dedupe_cutoff_ms) override;
  void append(AppendRequest req, AppendDone done) override;
  Result<std::vector<StoredMessage>> read_after(const ChannelKey& key, uint64_t after,
                                                uint32_t limit) override;
  Result<std::vector<StoredMessage>> read_before(const ChannelKey& key, uint64_t before,
                                                 uint32_t limit) override;
  void flush() override;
  size_t pending() const override;

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
};

}  // namespace parley::store
