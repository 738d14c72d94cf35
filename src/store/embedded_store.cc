#include "store/embedded_store.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <numeric>
#include <system_error>
#include <utility>

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include "common/clock.h"
#include "store/blocking_check.h"
#include "store/data_check.h"
#include "store/dedupe_expiry_filter.h"
#include "store/group_committer.h"
#include "store/reader_pool.h"
#include "store/record_codec.h"
#include "store/rocksdb_logger.h"
#include "store/segment/segment_log.h"
#include "store/store_state.h"

namespace parley::store {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
// Reads are short scans of one channel; two threads keep a cold recover from
// queueing every history read behind it on a two-core machine.
constexpr unsigned kReaderThreads = 2;
// Two memtables of 4 MiB: the memtables are most of the store's memory under a
// steady write load (an event stream at 35,000 events/s fills one in ~0.5 s), and
// 8 MiB ones held ~5 MiB more RSS for no measured gain (issue 12, bench/README.md
// "Memory").
constexpr size_t kWriteBufferBytes = 4 * kMiB;
constexpr size_t kMaxUnreadableLogged = 10000;  // channels remembered as already logged

// A message key is 'm' tenant \0 channel \0 seq (8 bytes, big-endian) and a dedupe
// key 'e' tenant \0 channel \0 seq DedupeKey: the part up to the seq is the
// channel, inside which seqs only grow. The memtable keeps the last insert position
// per prefix (memtable_insert_with_hint_prefix_extractor), so the next record of a
// channel is linked in next to the previous one instead of searched for from the
// skiplist's head: the writer thread spent over half its time in those searches
// under an event stream (issue 12's profile), and with dedupe records ordered by
// (sender, id) each of them was still such a search (issue 9: a skiplist walk in
// cold cache per durable pub). Other keys (records of earlier layouts, the probe)
// are inserted as before.
//
// Debian's RocksDB (7.8) shares these hints between the point keys and the range
// tombstones (fixed upstream in 2024, PR 12558): a hint into one skiplist used to
// insert into the other corrupts it. So a range tombstone's begin key must never
// be in the domain: the committer starts every trim at the bare channel prefix
// (group_committer.cc), which has no 8 bytes after its second NUL.
class ChannelOfSeqKey final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "parley.ChannelOfSeqKey"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), prefix_len(key));
  }
  bool InDomain(const rocksdb::Slice& key) const override { return prefix_len(key) != 0; }

 private:
  // Length of the channel part, or 0 outside the domain.
  static size_t prefix_len(const rocksdb::Slice& key) {
    if (key.size() < 3 + 8) return 0;
    if (key[0] == kMessageTag) {
      // 'm' tenant \0 channel \0, then 8 bytes: exactly two NULs before the seq,
      // the last one just before it.
      if (key[key.size() - 9] != '\0') return 0;
      const std::string_view prefix(key.data(), key.size() - 8);
      return std::count(prefix.begin(), prefix.end(), '\0') == 2 ? prefix.size() : 0;
    }
    if (key[0] == kDedupeTag) {
      // 'e' tenant \0 channel \0 (names hold no NUL), then 8 bytes of seq and a
      // DedupeKey of at least one byte.
      const char* begin = key.data();
      const char* end = begin + key.size();
      const auto* first = static_cast<const char*>(std::memchr(begin + 1, '\0', key.size() - 1));
      if (first == nullptr) return 0;
      const auto* second =
          static_cast<const char*>(std::memchr(first + 1, '\0', static_cast<size_t>(end - first - 1)));
      if (second == nullptr || end - second < 1 + 8 + 1) return 0;
      return static_cast<size_t>(second + 1 - begin);
    }
    return 0;
  }
};

// Compaction yields the CPU to the server's own threads: a universal merge
// takes a core for seconds, and on a two-core machine the loops, the store's
// writer and the flush (which a full memtable waits for) then shared the other
// one. Each compaction thread lowers its own priority by 10 nice steps (Linux
// nice is per thread) once, at its first compaction: below the server's threads,
// not below the rest of the machine (RocksDB's own LowerThreadPoolCPUPriority
// sets nice 19, and under other processes' load compaction starved and RocksDB
// slowed every write). Merged data is never waited for by a client.
class CompactionYields final : public rocksdb::EventListener {
 public:
  void OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override {
    thread_local bool lowered = false;
    if (lowered) return;
    lowered = true;
    const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, tid);
    if (errno == 0) ::setpriority(PRIO_PROCESS, tid, std::min(19, nice + 10));
  }
};

// Sized for a small machine: the whole server should idle under ~16 MiB RSS and stay
// far below the 20,000 open files a process may hold.
rocksdb::Options make_options(const DedupeExpiryFilter* filter, rocksdb::Env* env,
                              std::shared_ptr<rocksdb::Logger> logger,
                              rocksdb::WALRecoveryMode recovery,
                              std::shared_ptr<rocksdb::EventListener> damage_listener) {
  rocksdb::Options o;
  o.create_if_missing = true;
  if (env != nullptr) o.env = env;
  // RocksDB's info log goes to Parley's log, never to a file in the data dir: a log
  // write failing on a full disk made the next log line abort the process
  // (rocksdb_logger.h).
  o.info_log = std::move(logger);
  o.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Bounded so that the store's descriptors fit the process limit next to the
  // sockets (docs/operations.md "File descriptors"): the history held is small, and a
  // table-cache miss costs a reopen, not an error.
  o.max_open_files = 256;
  o.write_buffer_size = kWriteBufferBytes;
  o.max_write_buffer_number = 2;
  o.max_background_jobs = 2;
  // Stated, not left to the default: with paranoid checks a failed WAL write (or
  // flush) puts RocksDB in a stopped "background error" state that refuses every
  // later write before it touches the WAL again. Without them RocksDB would go on
  // appending to a WAL writer that has seen an error, which trips an assertion in
  // Debian's librocksdb and could write after a hole. Recovery from the stopped state
  // is explicit: Resume() (or RocksDB's own, once a full disk has space again).
  o.paranoid_checks = true;
  // WAL recovery, chosen per start (EmbeddedStore::open):
  //  - after a clean stop (PARLEY-STATE says clean), kAbsoluteConsistency: the WAL was
  //    flushed and closed, so ANY damage in it (a truncated or altered file) is data
  //    loss and must fail the open rather than be replayed up to the damage silently;
  //  - after a crash, kTolerateCorruptedTailRecords: a kill -9 can leave the last
  //    record half written (never acknowledged, it was being written), which is
  //    dropped; damage anywhere before the tail still fails the open. A tail cut off
  //    after a crash is indistinguishable from that torn write (documented limit);
  //  - kPointInTimeRecovery only when the operator accepted data loss: it replays up
  //    to the first damage and drops the rest, which is then announced (epoch + 1).
  o.wal_recovery_mode = recovery;
  auto supported = rocksdb::GetSupportedCompressions();
  // Messages are JSON: LZ4 is cheap and shrinks them; fall back to none on a build
  // without it (Debian's 7.8.3 has it).
  bool lz4 = std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) !=
             supported.end();
  o.compression = lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  o.compaction_filter = filter;
  // Universal compaction: every channel and partition appends at the end of its
  // own key range, so each flushed memtable spans the whole key space, and leveled
  // compaction merged it with ALL of L1 (every L1 file lies inside that range):
  // an event stream rewrote L1 (up to 256 MiB) every 16 MiB written, a third of
  // the server's CPU at 35,000 events/s and growing with the data held (issue 12's
  // profile). Universal merges sorted runs of similar size instead: each byte is
  // rewritten a logarithmic number of times, whatever the key layout.
  o.compaction_style = rocksdb::kCompactionStyleUniversal;
  o.memtable_insert_with_hint_prefix_extractor = std::make_shared<ChannelOfSeqKey>();
  o.listeners.push_back(std::make_shared<CompactionYields>());
  if (damage_listener) o.listeners.push_back(std::move(damage_listener));
  // Left at its default on purpose: the WAL is flushed to the OS on every write
  // (manual_wal_flush = false), so an acknowledged append survives kill -9.

  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(8 * kMiB);
  // Index blocks live in (and are bounded by) the cache instead of growing with
  // the number of files held open.
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

// One entry per (sender, id), the one of the highest seq, the survivors in their
// order. A reused id (sent again after its window ended, so given a new seq)
// overwrote its record while records were keyed by (sender, id); keyed by seq, both
// records stay until the older one expires, and the newer one is what the id now
// answers. Sorted indices rather than a map of key copies: a busy channel's window
// holds hundreds of thousands of ids, and this costs 4 bytes and a bit per entry.
void keep_newest_per_id(std::vector<DedupeEntry>& entries) {
  if (entries.size() < 2) return;
  std::vector<uint32_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const DedupeEntry& x = entries[a];
    const DedupeEntry& y = entries[b];
    if (int c = x.from.compare(y.from); c != 0) return c < 0;
    if (int c = x.id.compare(y.id); c != 0) return c < 0;
    return x.seq < y.seq;
  });
  std::vector<bool> older(entries.size(), false);
  bool any = false;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    const DedupeEntry& x = entries[order[i]];
    const DedupeEntry& y = entries[order[i + 1]];
    if (x.from == y.from && x.id == y.id) older[order[i]] = any = true;
  }
  if (!any) return;
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (older[i]) continue;
    if (kept != i) entries[kept] = std::move(entries[i]);
    ++kept;
  }
  entries.resize(kept);
}

// What a record that fails to decode is called in the log.
constexpr const char* kCorruptRecord = "Corruption: a message record does not decode";

bool is_lock_error(const rocksdb::Status& s) {
  std::string text = s.ToString();
  return s.IsIOError() &&
         (text.find("lock") != std::string::npos || text.find("LOCK") != std::string::npos);
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

// fsync of a folder: the entries made in it are durable.
Status sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{ErrorCode::kUnavailable, "embedded store: cannot open " + dir + ": " + std::strerror(errno)};
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Error{ErrorCode::kUnavailable, "embedded store: cannot fsync " + dir + ": " + std::strerror(errno)};
  return Status::ok();
}

// The file a RocksDB status text names ("... in /dir/000012.sst offset ..."), or "".
std::string file_in(const std::string& text) {
  for (const char* ext : {".sst", ".log", "MANIFEST"}) {
    const auto at = text.find(ext);
    if (at == std::string::npos) continue;
    auto begin = text.find_last_of(" /", at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    auto end = text.find_first_of(" ,:", at);
    return text.substr(begin, (end == std::string::npos ? text.size() : end) - begin);
  }
  return {};
}

// A checksum failure in RocksDB's own background work (a flush or compaction
// reading a damaged block) reaches health() at once, not at the next client read.
class DamageListener final : public rocksdb::EventListener {
 public:
  explicit DamageListener(EmbeddedStore* store) : store_(store) {}
  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* error) override {
    if (error && error->IsCorruption()) store_->note_damage(file_in(error->ToString()), error->ToString());
  }

 private:
  EmbeddedStore* store_;
};

// Copies of the WAL files a point-in-time recovery is about to drop, in a
// folder of their own beside the database (RocksDB ignores folders): what was
// written after the damage stays on disk for inspection or salvage.
Status keep_aside(const std::string& dir, const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  const fs::path aside = fs::path(dir) / ("damaged-wal-" + std::to_string(wall_ms()));
  std::error_code ec;
  fs::create_directories(aside, ec);
  for (const auto& f : files) {
    if (!ec) fs::copy_file(fs::path(dir) / f, aside / f, ec);
    if (ec) break;
    const int fd = ::open((aside / f).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  if (ec) {
    return Error{ErrorCode::kUnavailable,
                 "embedded store: cannot keep the damaged WAL files in " + aside.string() + ": " +
                     ec.message()};
  }
  if (Status s = sync_dir(aside.string()); !s) return s;
  return sync_dir(dir);
}

}  // namespace

Result<std::unique_ptr<EmbeddedStore>> EmbeddedStore::open(const EmbeddedOptions& opts,
                                                           rocksdb::Env* env) {
  if (opts.dir.empty()) return Error{ErrorCode::kInternal, "embedded store: no data dir given"};
  std::error_code ec;
  // The folders made here must survive a power loss like the files in them:
  // each new one's entry is in its parent, which is synced (issue 26: without
  // it, the power-loss tests' file system dropped a new data dir whole).
  std::filesystem::path existing = std::filesystem::absolute(opts.dir, ec);
  while (!existing.empty() && existing != existing.root_path() &&
         !std::filesystem::exists(existing, ec)) {
    existing = existing.parent_path();
  }
  std::filesystem::create_directories(opts.dir, ec);
  if (ec) {
    return Error{ErrorCode::kUnavailable,
                 "embedded store: cannot create " + opts.dir + ": " + ec.message()};
  }
  for (auto dir = std::filesystem::absolute(opts.dir, ec); !dir.empty(); dir = dir.parent_path()) {
    if (Status s = sync_dir(dir.string()); !s) return s.error();
    if (dir == existing || dir == dir.root_path()) break;
  }
  std::unique_ptr<EmbeddedStore> store(new EmbeddedStore(opts, env));
  StoreStateFile& state = *store->state_;
  if (Status s = state.load(); !s) return s.error();

  const bool was_clean = state.data().clean;
  // A machine stop (another boot id) since an unclean stop: with fsync = never
  // the WAL's tail since the last sync may be gone, acknowledged messages with
  // it, and the channels' last seqs read back lower than seqs already given
  // out. Announce it as an accepted loss does: epoch + 1, and every channel
  // continues above the ceiling (the ceiling is fsynced before any seq above it
  // is written, so it bounds them all). A crash of the process alone (same
  // boot) loses nothing: the kernel still had every write.
  const std::string boot = current_boot_id();
  if (!was_clean && opts.fsync == FsyncMode::kNever && !boot.empty() &&
      !state.data().boot.empty() && state.data().boot != boot) {
    state.data().epoch += 1;
    state.data().loss_floor = state.data().seq_ceiling;
    state.data().boot = boot;
    if (Status saved = state.save(); !saved) return saved.error();
    store->loss_accepted_ = true;
    spdlog::warn("store: the machine stopped (new boot id) while the store was open with "
                 "fsync = \"never\": writes since the last sync may be lost. Epoch is now {}, "
                 "channels continue above seq {}",
                 state.data().epoch, state.data().loss_floor);
  }
  state.data().boot = boot;
  auto options = [&](rocksdb::WALRecoveryMode mode) {
    return make_options(store->filter_.get(), env, store->logger_, mode, store->damage_listener_);
  };
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(
      options(was_clean ? rocksdb::WALRecoveryMode::kAbsoluteConsistency
                        : rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords),
      opts.dir, &raw);
  if (s.IsCorruption()) {
    spdlog::error("store: recovery of {} (after a {} stop) found damaged data: {}", opts.dir,
                  was_clean ? "clean" : "unclean", s.ToString());
    const WalLoss dropped = opts.accept_data_loss ? WalLoss{} : wal_loss(opts.dir);
    if (dropped.found && !dropped.channels.empty() &&
        dropped.channels.size() + state.data().damaged.size() <= StoreStateFile::kMaxDamagedChannels) {
      // A damaged WAL record: serve what is intact, not nothing. A point-in-time
      // recovery keeps every record before it and drops it and everything after,
      // so the channels written from there on may have lost acknowledged
      // messages (with fsync = always too): they stay unavailable, listed in
      // PARLEY-STATE before anything is dropped, until a start with
      // accept_data_loss or a restore. Every other channel lost nothing and goes
      // on at its seq and epoch. The dropped WAL files are kept aside.
      if (Status kept = keep_aside(opts.dir, dropped.files); !kept) return kept.error();
      auto& list = state.data().damaged;
      for (const auto& ch : dropped.channels) {
        if (std::find(list.begin(), list.end(), ch) == list.end()) list.push_back(ch);
      }
      if (Status saved = state.save(); !saved) return saved.error();
      s = rocksdb::DB::Open(options(rocksdb::WALRecoveryMode::kPointInTimeRecovery), opts.dir, &raw);
      if (s.ok()) {
        spdlog::error("store: started without what followed a damaged WAL record ({} in {}); "
                      "{} channels written from there on are unavailable until a start with "
                      "accept_data_loss or a restore (docs/operations.md \"Damaged data\")",
                      dropped.what, dropped.file, dropped.channels.size());
      }
    } else if (!opts.accept_data_loss) {
      return Error{ErrorCode::kInternal,
                   "embedded store: " + opts.dir + " holds damaged data (" + s.ToString() +
                       "). Refusing to start rather than lose acknowledged messages silently. "
                       "To start with what can still be read, set `accept_data_loss = true` in "
                       "[server] (or pass --accept-data-loss) for one start: messages past the "
                       "damage are dropped, the store's epoch goes up and every channel's seq "
                       "continues above any seq that may have been acknowledged"};
    } else {
      // The loss is on disk before the data is dropped: a crash between the two must
      // not let a later start forget it (and reuse acknowledged seqs).
      state.data().epoch += 1;
      state.data().loss_floor = state.data().seq_ceiling;
      state.data().damaged.clear();
      if (Status saved = state.save(); !saved) return saved.error();
      s = rocksdb::DB::Open(options(rocksdb::WALRecoveryMode::kPointInTimeRecovery), opts.dir, &raw);
      if (s.ok()) {
        store->loss_accepted_ = true;
        spdlog::error(
            "store: started with data loss accepted (accept_data_loss): what followed the damage "
            "is gone; epoch is now {}, channels continue above seq {}",
            state.data().epoch, state.data().loss_floor);
      }
    }
  } else if (s.ok() && opts.accept_data_loss && !state.data().damaged.empty()) {
    // The operator accepts what an earlier start dropped behind a damaged WAL
    // record: the channels it listed come back above the ceiling, as after any
    // accepted loss.
    state.data().epoch += 1;
    state.data().loss_floor = state.data().seq_ceiling;
    const size_t n = state.data().damaged.size();
    state.data().damaged.clear();
    if (Status saved = state.save(); !saved) {
      delete raw;
      return saved.error();
    }
    store->loss_accepted_ = true;
    spdlog::warn("store: data loss accepted for the {} channels a damaged WAL record had made "
                 "unavailable; epoch is now {}, channels continue above seq {}",
                 n, state.data().epoch, state.data().loss_floor);
  }
  std::optional<Refusal> refusing;
  if (!s.ok() && !is_lock_error(s) && !s.IsCorruption()) {
    // A disk too full (or a process short of descriptors) to open for writing: serve
    // what is there and refuse appends until the committer manages a writable open.
    rocksdb::DB* ro = nullptr;
    rocksdb::Status rs = rocksdb::DB::OpenForReadOnly(
        options(rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords), opts.dir, &ro);
    if (rs.ok()) {
      raw = ro;
      store->read_only_ = true;
      refusing = Refusal{refusal_reason(s.ToString()), "cannot open for writing: " + s.ToString(),
                         wall_ms()};
      spdlog::error("store: {}; serving reads read-only, appends refused ({}) until it can",
                    refusing->detail, refusing->reason);
      s = rocksdb::Status::OK();
    }
  }
  if (!s.ok()) {
    if (is_lock_error(s)) {
      return Error{ErrorCode::kUnavailable,
                   "embedded store: " + opts.dir +
                       " is already in use (another process, or this one, holds its LOCK): " +
                       s.ToString()};
    }
    return Error{ErrorCode::kUnavailable,
                 "embedded store: cannot open " + opts.dir + ": " + s.ToString()};
  }
  store->db_.reset(raw);
  store->epoch_ = state.data().epoch;
  store->loss_floor_ = state.data().loss_floor;
  if (const auto& listed = state.data().damaged; !listed.empty()) {
    store->unavailable_.insert(listed.begin(), listed.end());
    // Said at every start until resolved: /healthz store_damaged, the log.
    std::vector<std::string> named(listed.begin(), listed.begin() + std::min<size_t>(listed.size(), 20));
    if (listed.size() > named.size()) named.push_back("and " + std::to_string(listed.size() - named.size()) + " more");
    store->note_damage("", std::to_string(listed.size()) +
                               " channels unavailable: their WAL records after a damaged one were "
                               "dropped (PARLEY-STATE lists them)", named);
  }
  if (!store->read_only_) {
    // Until the next clean stop, a damaged WAL is damage, not a torn tail: say so
    // before anything is written.
    state.data().clean = false;
    if (Status saved = state.save(); saved) {
      store->state_saved_ = true;
    } else {
      refusing = Refusal{refusal_reason(saved.error().msg), saved.error().msg, wall_ms()};
      spdlog::error("store: {}; appends refused ({}) until it can be written",
                    saved.error().msg, refusing->reason);
    }
  }
  EmbeddedStore* self = store.get();
  if (Status s = store->open_log(); !s) return s.error();
  GroupCommitter::Hooks hooks{
      [self] { return self->db_.get(); },
      [self](uint64_t max_seq) { return self->state_->reserve(max_seq); },
      [self] { return self->try_recover_writes(); },
      nullptr,
      {}};
  if (opts.topic_log == TopicLog::kSegment && store->log_) {
    hooks.log = store->log_.get();
    hooks.in_log = [self](const ChannelKey& key) { return self->in_log(key); };
  }
  store->committer_ =
      std::make_unique<GroupCommitter>(std::move(hooks), opts.fsync, opts.max_batch, refusing,
                                       opts.channel_idle_ms);
  store->readers_ = std::make_unique<ReaderPool>(kReaderThreads);
  if (opts.verify_bytes > 0) store->readers_->post([self] { self->verify_at_start(); });
  return store;
}

EmbeddedStore::EmbeddedStore(const EmbeddedOptions& opts, rocksdb::Env* env)
    : opts_(opts),
      env_(env),
      filter_(std::make_unique<DedupeExpiryFilter>(&wall_ms)),
      logger_(std::make_shared<RocksDbLogger>()),
      state_(std::make_unique<StoreStateFile>(opts.dir)),
      damage_listener_(std::make_shared<DamageListener>(this)) {}

EmbeddedStore::~EmbeddedStore() {
  readers_.reset();    // runs the reads already asked for, joins the readers
  const bool refusing = committer_ && committer_->refusal().has_value();
  committer_.reset();  // drains the queue, joins the writer
  if (!db_) return;
  std::unique_lock lock(db_mu_);
  // A clean stop leaves nothing in the WAL that is not also in a flushed table, so
  // the next start can demand a perfect WAL (kAbsoluteConsistency) and a WAL cut or
  // damaged while the server is down costs nothing.
  bool clean = false;
  if (!read_only_ && !refusing && state_saved_) {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    clean = db_->Flush(fo).ok();
  }
  clean = db_->Close().ok() && clean;
  db_.reset();
  if (clean) {
    state_->data().clean = true;
    if (Status s = state_->save(); !s) spdlog::warn("store: {}", s.error().msg);
  }
}

Status EmbeddedStore::try_recover_writes() {
  bool reopen = true;
  {
    std::shared_lock lock(db_mu_);
    if (db_ && !read_only_) {
      rocksdb::Status s = db_->Resume();
      if (s.IsBusy()) {
        // RocksDB's own recovery is running: for a full disk it waits until there is
        // room for a memtable flush (checked every 5 s by its SstFileManager).
        return Error{ErrorCode::kUnavailable, "store recovery in progress"};
      }
      if (!s.ok() && s.severity() < rocksdb::Status::Severity::kFatalError) {
        return Error{ErrorCode::kUnavailable, s.ToString()};
      }
      // A fatal background error (e.g. no descriptor for a new WAL) cannot be
      // resumed: only a fresh open clears it.
      reopen = !s.ok();
      if (reopen) spdlog::warn("store: cannot resume ({}); reopening the database", s.ToString());
    }
  }
  if (reopen) {
    std::unique_lock lock(db_mu_);
    if (Status r = reopen_locked(); !r) return r;
  }
  if (!state_saved_) {
    state_->data().clean = false;
    if (Status saved = state_->save(); !saved) return saved;
    state_saved_ = true;
  }
  // A write that must succeed before the store says it is writable again.
  std::shared_lock lock(db_mu_);
  rocksdb::WriteBatch probe;
  probe.Put(std::string(1, kProbeTag), std::to_string(wall_ms()));
  rocksdb::WriteOptions wo;
  wo.sync = opts_.fsync == FsyncMode::kAlways;
  rocksdb::Status s = db_->Write(wo, &probe);
  if (!s.ok()) return Error{ErrorCode::kUnavailable, s.ToString()};
  return Status::ok();
}

Status EmbeddedStore::reopen_locked() {
  auto options = [&](bool clean) {
    return make_options(filter_.get(), env_, logger_,
                        clean ? rocksdb::WALRecoveryMode::kAbsoluteConsistency
                              : rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords,
                        damage_listener_);
  };
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s;
  if (db_ && read_only_) {
    // Each failed open leaves an empty WAL and MANIFEST behind and logs its failure:
    // wait for room for a memtable flush, what RocksDB's own recovery waits for too.
    struct statvfs fs {};
    if (::statvfs(opts_.dir.c_str(), &fs) == 0 &&
        static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < kWriteBufferBytes) {
      return Error{ErrorCode::kUnavailable, "not enough free space to open for writing"};
    }
    // The read-only instance holds no lock: open for writing beside it, and swap, so
    // reads go on while space is still missing.
    s = rocksdb::DB::Open(options(state_->data().clean), opts_.dir, &raw);
    if (!s.ok()) return Error{ErrorCode::kUnavailable, s.ToString()};
    db_->Close();
    db_.reset(raw);
    read_only_ = false;
    spdlog::warn("store: reopened for writing");
    return Status::ok();
  }
  if (db_) db_->Close();
  db_.reset();
  s = rocksdb::DB::Open(options(false), opts_.dir, &raw);
  if (s.ok()) {
    db_.reset(raw);
    read_only_ = false;
    spdlog::warn("store: reopened");
    return Status::ok();
  }
  const std::string why = s.ToString();
  s = rocksdb::DB::OpenForReadOnly(options(false), opts_.dir, &raw);
  if (!s.ok()) {
    // Nothing open: reads fail too until a later attempt succeeds.
    spdlog::error("store: cannot reopen ({}), not even read-only ({})", why, s.ToString());
    return Error{ErrorCode::kUnavailable, why};
  }
  db_.reset(raw);
  read_only_ = true;
  return Error{ErrorCode::kUnavailable, why};
}

Error EmbeddedStore::read_failed(const ChannelKey& key, const std::string& what) {
  const bool corrupt = what.find("Corruption") != std::string::npos;
  if (corrupt) {
    note_damage(file_in(what), what);
    unreadable_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(unreadable_mu_);
    if (unreadable_logged_.size() < kMaxUnreadableLogged &&
        unreadable_logged_.insert(key.tenant + '\0' + key.channel).second) {
      spdlog::error("store: unreadable data in channel {} of tenant {}: {}", key.channel,
                    key.tenant, what);
    }
  } else {
    spdlog::warn("store: read of channel {} of tenant {} failed: {}", key.channel, key.tenant,
                 what);
  }
  return Error{ErrorCode::kUnavailable, corrupt ? "store data unreadable" : "store read failed",
               kRefusalRetryMs};
}

void EmbeddedStore::recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) {
  readers_->post([this, key, dedupe_cutoff_ms, done = std::move(done)] {
    done(recover_now(key, dedupe_cutoff_ms));
  });
}

void EmbeddedStore::recover_marks(const ChannelKey& key, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                                  RecoverDone done) {
  readers_->post([this, key, dedupe_cutoff_ms, hash, done = std::move(done)] {
    done(recover_now(key, dedupe_cutoff_ms, hash));
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

bool EmbeddedStore::unavailable(const ChannelKey& key) const {
  return !unavailable_.empty() && unavailable_.count(key.tenant + '/' + key.channel) != 0;
}

namespace {
Error damaged_channel() {
  return Error{ErrorCode::kUnavailable, "store data damaged", kRefusalRetryMs};
}
}  // namespace

Result<ChannelRecovery> EmbeddedStore::recover_now(const ChannelKey& key,
                                                   int64_t dedupe_cutoff_ms, KeyHashFn hash) {
  check_may_block();
  if (unavailable(key)) return damaged_channel();
  ChannelRecovery out;
  out.epoch = epoch_;
  std::shared_lock lock(db_mu_);
  if (!db_) return read_failed(key, "store not open");
  {
    ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
    it->SeekForPrev(it.upper());
    if (it->Valid()) {
      rocksdb::Slice k = it->key();
      if (!parse_message_seq(std::string_view(k.data(), k.size()), it.prefix().size(),
                             out.last_seq)) {
        return read_failed(key, kCorruptRecord);
      }
    }
    if (!it->status().ok()) return read_failed(key, it->status().ToString());
  }
  // After an accepted loss, anything up to the floor may have been acknowledged.
  out.last_seq = std::max(out.last_seq, loss_floor_);

  rocksdb::WriteBatch expired;
  const int64_t now = wall_ms();
  // Every layout, oldest first: records of earlier builds stay readable until they
  // expire (record_codec.h).
  for (char tag : kDedupeTags) {
    ChannelIterator it(db_.get(), channel_prefix(tag, key));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      rocksdb::Slice k = it->key(), v = it->value();
      DedupeValue dv;
      DedupeEntry e;
      std::string_view suffix(k.data() + it.prefix().size(), k.size() - it.prefix().size());
      if (!decode_dedupe_value(std::string_view(v.data(), v.size()), dv) ||
          !parse_dedupe_suffix(tag, suffix, e.from, e.id)) {
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
    if (!it->status().ok()) return read_failed(key, it->status().ToString());
  }
  if (log_) {
    if (Status s = recover_from_log(key, dedupe_cutoff_ms, hash, out); !s) {
      return read_failed(key, s.error().msg);
    }
  }
  keep_newest_per_id(out.dedupe);
  if (hash != nullptr) {
    // RocksDB's entries (a partition kept there, or written there before a
    // switch to the segment log): few beside the log's, which came as marks.
    std::string bytes;
    for (const DedupeEntry& e : out.dedupe) {
      bytes.clear();
      DedupeKey::append(bytes, e.from, e.id);
      out.marks.push_back(DedupeMark{hash(bytes), e.seq, e.ts_ms});
    }
    std::vector<DedupeEntry>().swap(out.dedupe);
  }
  // Best effort: the compaction filter drops whatever this misses. A stopped or
  // read-only database refuses the write without touching its files.
  if (expired.Count() > 0 && !read_only_) db_->Write(rocksdb::WriteOptions(), &expired);
  return out;
}

void EmbeddedStore::append(AppendRequest req, AppendDone done) {
  committer_->submit(std::move(req), std::move(done));
}

void EmbeddedStore::append_many(std::vector<std::pair<AppendRequest, AppendDone>> reqs) {
  committer_->submit_many(std::move(reqs));
}

Result<std::vector<StoredMessage>> EmbeddedStore::read_after_now(const ChannelKey& key,
                                                                 uint64_t after, uint32_t limit) {
  check_may_block();
  if (unavailable(key)) return damaged_channel();
  std::vector<StoredMessage> out;
  if (limit == 0 || after == UINT64_MAX) return out;
  if (in_log(key)) {
    auto r = log_->read_after(key, after, limit);
    return r ? std::move(r) : read_failed(key, r.error().msg);
  }
  std::shared_lock lock(db_mu_);
  if (!db_) return read_failed(key, "store not open");
  ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
  out.reserve(std::min<uint32_t>(limit, 256));
  for (it->Seek(it.seq_key(after + 1)); it->Valid() && out.size() < limit; it->Next()) {
    if (!it.read(out.emplace_back())) return read_failed(key, kCorruptRecord);
  }
  if (!it->status().ok()) return read_failed(key, it->status().ToString());
  return out;
}

Result<std::vector<StoredMessage>> EmbeddedStore::read_before_now(const ChannelKey& key,
                                                                  uint64_t before,
                                                                  uint32_t limit) {
  check_may_block();
  if (unavailable(key)) return damaged_channel();
  std::vector<StoredMessage> out;
  if (limit == 0 || before == 0) return out;
  if (in_log(key)) {
    auto r = log_->read_before(key, before, limit);
    return r ? std::move(r) : read_failed(key, r.error().msg);
  }
  std::shared_lock lock(db_mu_);
  if (!db_) return read_failed(key, "store not open");
  ChannelIterator it(db_.get(), channel_prefix(kMessageTag, key));
  out.reserve(std::min<uint32_t>(limit, 256));
  for (it->SeekForPrev(it.seq_key(before - 1)); it->Valid() && out.size() < limit; it->Prev()) {
    if (!it.read(out.emplace_back())) return read_failed(key, kCorruptRecord);
  }
  if (!it->status().ok()) return read_failed(key, it->status().ToString());
  std::reverse(out.begin(), out.end());
  return out;
}

void EmbeddedStore::flush() {
  check_may_block();
  committer_->flush();
  readers_->wait_idle();
}

size_t EmbeddedStore::pending() const { return committer_->pending(); }

size_t EmbeddedStore::channels_tracked() const { return committer_->channels_tracked(); }

StoreHealth EmbeddedStore::health() const {
  StoreHealth h;
  if (auto r = committer_->refusal()) {
    h.writable = false;
    h.reason = r->reason;
    h.detail = r->detail;
    h.since_ms = r->since_ms;
  }
  h.epoch = epoch_;
  h.loss_accepted = loss_accepted_;
  h.unreadable_reads = unreadable_.load(std::memory_order_relaxed);
  h.damaged_files = damaged_count_.load(std::memory_order_relaxed);
  if (h.damaged_files > 0 && h.reason.empty()) h.reason = "corruption";
  return h;
}

void EmbeddedStore::note_damage(const std::string& file, const std::string& what,
                                const std::vector<std::string>& channels) {
  std::lock_guard lock(damage_mu_);
  // One count per file; damage RocksDB did not place counts once as "".
  if (damaged_files_.size() >= kMaxUnreadableLogged || !damaged_files_.insert(file).second) return;
  damaged_count_.fetch_add(1, std::memory_order_relaxed);
  std::string names;
  for (const auto& c : channels) names += (names.empty() ? "" : ", ") + c;
  spdlog::error("store: damaged data in {} ({}){}{}; /healthz reports corruption. "
                "`parley verify-data` lists every damaged file; docs/operations.md "
                "\"Damaged data\" says how to recover",
                file.empty() ? opts_.dir : opts_.dir + "/" + file, what,
                names.empty() ? "" : "; channels: ", names);
}

void EmbeddedStore::verify_at_start() {
  const auto t0 = std::chrono::steady_clock::now();
  const rocksdb::Options o = make_options(filter_.get(), env_, logger_,
                                          rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords,
                                          nullptr);
  std::vector<std::string> live;
  {
    std::shared_lock lock(db_mu_);
    if (!db_) return;
    std::vector<rocksdb::LiveFileMetaData> files;
    db_->GetLiveFilesMetaData(&files);
    live = table_names(files);
  }
  const CheckResult r = check_tables(opts_.dir, o, opts_.verify_bytes, &live);
  for (const auto& d : r.damaged) note_damage(d.file, d.what, d.channels);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  spdlog::info("store: checked {} table files ({} KiB) in {} ms, {} damaged, {} past the "
               "verify_bytes budget", r.files_checked, r.bytes_checked / 1024, ms,
               r.damaged.size(), r.files_skipped);
}

Status EmbeddedStore::compact() {
  check_may_block();
  rocksdb::CompactRangeOptions o;
  // Rewrite the last level too: that is where old dedupe records end up.
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  std::shared_lock lock(db_mu_);
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
