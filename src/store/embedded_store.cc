#include "store/embedded_store.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include "common/clock.h"
#include "store/blocking_check.h"
#include "store/dedupe_expiry_filter.h"
#include "store/group_committer.h"
#include "store/reader_pool.h"
#include "store/record_codec.h"

namespace parley::store {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
// Reads are short scans of one channel; two threads keep a cold recover from
// queueing every history read behind it on a two-core machine.
constexpr unsigned kReaderThreads = 2;

// Sized for a small machine: the whole server should idle under ~16 MiB RSS and stay
// far below the 20,000 open files a process may hold.
rocksdb::Options make_options(const DedupeExpiryFilter* filter, rocksdb::Env* env) {
  rocksdb::Options o;
  o.create_if_missing = true;
  if (env != nullptr) o.env = env;
  o.max_open_files = 512;
  o.write_buffer_size = 8 * kMiB;
  o.max_write_buffer_number = 2;
  o.max_background_jobs = 2;
  o.keep_log_file_num = 2;  // RocksDB's own info LOG files, not the WAL
  o.max_log_file_size = 4 * kMiB;
  // Messages are JSON: LZ4 is cheap and shrinks them; fall back to none on a build
  // without it (Debian's 7.8.3 has it).
  auto supported = rocksdb::GetSupportedCompressions();
  bool lz4 = std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) !=
             supported.end();
  o.compression = lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  o.compaction_filter = filter;
  // Left at their defaults on purpose: the WAL is on and flushed to the OS on every
  // write (manual_wal_flush = false), and kPointInTimeRecovery replays a torn WAL
  // tail (power loss under kNever) up to the last complete batch: a prefix of what
  // was written, so never a seq gap.

  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(8 * kMiB);
  // Index blocks live in (and are bounded by) the cache instead of growing with
  // the number of files held open.
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

Error open_error(const std::string& dir, const rocksdb::Status& s) {
  std::string text = s.ToString();
  // RocksDB reports a held LOCK file as an IO error naming the lock.
  if (s.IsIOError() && (text.find("lock") != std::string::npos ||
                        text.find("LOCK") != std::string::npos)) {
    return Error{ErrorCode::kUnavailable,
                 "embedded store: " + dir +
                     " is already in use (another process, or this one, holds its LOCK): " +
                     text};
  }
  return Error{ErrorCode::kUnavailable, "embedded store: cannot open " + dir + ": " + text};
}

Error read_error(const rocksdb::Status& s) {
  return Error{ErrorCode::kUnavailable, "store read failed: " + s.ToString()};
}

Error corrupt_record() {
  return Error{ErrorCode::kInternal, "store: corrupt message record"};
}

// An iterator confined to one channel's keys of one kind; used on the caller's
// thread for the length of one call. Not movable: ReadOptions points at its bounds.
class ChannelIterator {
 public:
  ChannelIterator(rocksdb::DB* db, std::string prefix)
      : prefix_(std::move(prefix)), upper_(prefix_upper_bound(prefix_)), lo_(prefix_),
        hi_(upper_) {
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lo_;
    ro.iterate_upper_bound = &hi_;
    it_.reset(db->NewIterator(ro));
  }
  ChannelIterator(const ChannelIterator&) = delete;
  ChannelIterator& operator=(const ChannelIterator&) = delete;
  rocksdb::Iterator* operator->() { return it_.get(); }
  const std::string& prefix() const { return prefix_; }
  const std::string& upper() const { return upper_; }
  std::string seq_key(uint64_t seq) const {
    std::string k = prefix_;
    append_seq(k, seq);
    return k;
  }
  // Decodes the current message record; false when it is malformed.
  bool read(StoredMessage& m) {
    rocksdb::Slice k = it_->key(), v = it_->value();
    return parse_message_seq(std::string_view(k.data(), k.size()), prefix_.size(), m.seq) &&
           decode_message_value(std::string_view(v.data(), v.size()), m);
  }

 private:
  std::string prefix_, upper_;
  rocksdb::Slice lo_, hi_;  // point into prefix_ / upper_; ReadOptions keeps their address
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

Result<std::unique_ptr<EmbeddedStore>> EmbeddedStore::open(const EmbeddedOptions& opts,
                                                           rocksdb::Env* env) {
  if (opts.dir.empty()) return Error{ErrorCode::kInternal, "embedded store: no data dir given"};
  std::error_code ec;
  std::filesystem::create_directories(opts.dir, ec);
  if (ec) {
    return Error{ErrorCode::kUnavailable,
                 "embedded store: cannot create " + opts.dir + ": " + ec.message()};
  }
  auto filter = std::make_unique<DedupeExpiryFilter>(&wall_ms);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(make_options(filter.get(), env), opts.dir, &raw);
  if (!s.ok()) return open_error(opts.dir, s);
  return std::unique_ptr<EmbeddedStore>(
      new EmbeddedStore(std::move(filter), std::unique_ptr<rocksdb::DB>(raw), opts));
}

EmbeddedStore::EmbeddedStore(std::unique_ptr<DedupeExpiryFilter> filter,
                             std::unique_ptr<rocksdb::DB> db, const EmbeddedOptions& opts)
    : filter_(std::move(filter)),
      db_(std::move(db)),
      committer_(std::make_unique<GroupCommitter>(db_.get(), opts.fsync, opts.max_batch)),
      readers_(std::make_unique<ReaderPool>(kReaderThreads)) {}

EmbeddedStore::~EmbeddedStore() {
  readers_.reset();    // runs the reads already asked for, joins the readers
  committer_.reset();  // drains the queue, joins the writer
  db_->Close();        // nothing to do with an error this late; the WAL has the data
}

void EmbeddedStore::recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) {
  readers_->post([this, key, dedupe_cutoff_ms, done = std::move(done)] {
    done(recover_now(key, dedupe_cutoff_ms));
  });
}

void EmbeddedStore::read_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                               ReadDone done) {
  readers_->post([this, key, after, limit, done = std::move(done)] {
    done(read_after_now(key, after, limit));
  });
}

void EmbeddedStore::read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                                ReadDone done) {
  readers_->post([this, key, before, limit, done = std::move(done)] {
    done(read_before_now(key, before, limit));
  });
}

Result<ChannelRecovery> EmbeddedStore::recover_now(const ChannelKey& key,
                                                   int64_t dedupe_cutoff_ms) {
  check_may_block();
  ChannelRecovery out;
  {
    ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
    it->SeekForPrev(it.upper());
    if (it->Valid()) {
      rocksdb::Slice k = it->key();
      if (!parse_message_seq(std::string_view(k.data(), k.size()), it.prefix().size(),
                             out.last_seq)) {
        return corrupt_record();
      }
    }
    if (!it->status().ok()) return read_error(it->status());
  }

  ChannelIterator it(db_.get(), channel_prefix(kDedupeTag, key));
  rocksdb::WriteBatch expired;
  const int64_t now = wall_ms();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice k = it->key(), v = it->value();
    DedupeValue dv;
    DedupeEntry e;
    std::string_view suffix(k.data() + it.prefix().size(), k.size() - it.prefix().size());
    if (!decode_dedupe_value(std::string_view(v.data(), v.size()), dv) ||
        !parse_dedupe_suffix(suffix, e.from, e.id)) {
      continue;  // an unreadable entry only weakens dedupe; it must not block recovery
    }
    if (dv.ts_ms >= dedupe_cutoff_ms) {
      e.seq = dv.seq;
      e.ts_ms = dv.ts_ms;
      out.dedupe.push_back(std::move(e));
    } else if (dv.expiry_ms < now) {
      expired.Delete(k);
    }
  }
  if (!it->status().ok()) return read_error(it->status());
  // Best effort: the compaction filter drops whatever this misses.
  if (expired.Count() > 0) db_->Write(rocksdb::WriteOptions(), &expired);
  return out;
}

void EmbeddedStore::append(AppendRequest req, AppendDone done) {
  committer_->submit(std::move(req), std::move(done));
}

Result<std::vector<StoredMessage>> EmbeddedStore::read_after_now(const ChannelKey& key,
                                                                 uint64_t after, uint32_t limit) {
  check_may_block();
  std::vector<StoredMessage> out;
  if (limit == 0 || after == UINT64_MAX) return out;
  ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
  out.reserve(std::min<uint32_t>(limit, 256));
  for (it->Seek(it.seq_key(after + 1)); it->Valid() && out.size() < limit; it->Next()) {
    if (!it.read(out.emplace_back())) return corrupt_record();
  }
  if (!it->status().ok()) return read_error(it->status());
  return out;
}

Result<std::vector<StoredMessage>> EmbeddedStore::read_before_now(const ChannelKey& key,
                                                                  uint64_t before,
                                                                  uint32_t limit) {
  check_may_block();
  std::vector<StoredMessage> out;
  if (limit == 0 || before == 0) return out;
  ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
  out.reserve(std::min<uint32_t>(limit, 256));
  for (it->SeekForPrev(it.seq_key(before - 1)); it->Valid() && out.size() < limit; it->Prev()) {
    if (!it.read(out.emplace_back())) return corrupt_record();
  }
  if (!it->status().ok()) return read_error(it->status());
  std::reverse(out.begin(), out.end());
  return out;
}

void EmbeddedStore::flush() {
  check_may_block();
  committer_->flush();
  readers_->wait_idle();
}

size_t EmbeddedStore::pending() const { return committer_->pending(); }

Status EmbeddedStore::compact() {
  check_may_block();
  rocksdb::CompactRangeOptions o;
  // Rewrite the last level too: that is where old dedupe records end up.
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Status s = db_->CompactRange(o, nullptr, nullptr);
  if (!s.ok()) return Error{ErrorCode::kUnavailable, "store compaction failed: " + s.ToString()};
  return Status::ok();
}

Result<std::unique_ptr<Store>> open_embedded_store(const EmbeddedOptions& opts) {
  auto r = EmbeddedStore::open(opts);
  if (!r) return r.error();
  return std::unique_ptr<Store>(std::move(r.value()));
}

}  // namespace parley::store
