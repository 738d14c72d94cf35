#include "store/segment/segment_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/fnv1a.h"
#include "store/blocking_check.h"
#include "store/record_codec.h"
#include "store/store_policy.h"
#include "store/store_refusal.h"

namespace parley::store::segment {

struct SegmentLog::Part {
  ChannelId id;
  std::string dir;

  // Guards what readers see: loaded, damaged, segs, last_off. The writer thread
  // changes them under it exclusively and reads them without it.
  std::shared_mutex mu;
  bool loaded = false;
  std::optional<Error> damaged;  // a segment before the newest does not check
  std::vector<SegmentMeta> segs;  // oldest first
  uint64_t last_off = 0;

  // Writer thread (and load_locked, which the writer waits for).
  int fd = -1;               // the newest segment, open for writing
  bool dir_made = false;
  bool sealed_tail = false;  // segs.back() is sealed: the next append starts a segment
  uint64_t next_index_pos = 0;
  std::string staged;        // records of the batch being built
  bool staging = false;
  uint64_t staged_base = 0;  // > 0: the staged records start a new segment at this base
  uint64_t write_at = 0;     // where the staged bytes go (after the header for a new file)
  SegmentMeta delta;         // what the staged records add to the newest segment
  uint32_t limit = 1000;
  int64_t last_write_ms = 0;
};

namespace {

constexpr int kRetryMs = 1000;
constexpr size_t kReadChunk = 256 << 10;
constexpr size_t kKeepStagedBytes = 1 << 20;

Error io_error(const std::string& what, const std::string& path, int err) {
  return Error{ErrorCode::kUnavailable, "segment log: " + what + " " + path + ": " + std::strerror(err)};
}

Error unreadable() {
  return Error{ErrorCode::kUnavailable, "store data unreadable", kRetryMs};
}

Status sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return io_error("cannot fsync", dir, err);
  return Status::ok();
}

Status pwrite_all(int fd, const char* p, size_t n, uint64_t at, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write", path, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return Status::ok();
}

// Safe as a file name, one-to-one: [A-Za-z0-9._-] stay, every other byte is %XX.
void escape_into(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
        c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

// The folder name of a partition: escaped tenant '~' escaped channel; a name too
// long for a file name keeps its start and ends in a hash of the whole.
std::string folder_name(const ChannelId& id) {
  std::string n;
  escape_into(n, id.tenant);
  n.push_back('~');
  escape_into(n, id.channel);
  if (n.size() > 200) {
    char h[24];
    std::snprintf(h, sizeof h, "#%016llx",
                  static_cast<unsigned long long>(fnv1a_64(id.channel, fnv1a_64(id.tenant))));
    n.resize(160);
    if (n[159] == '%' ) n.resize(159);
    else if (n[158] == '%') n.resize(158);
    n += h;
  }
  return n;
}

// Reads the records of one file region in order, in chunks.
class RecordReader {
 public:
  RecordReader(int fd, uint64_t pos, uint64_t end) : fd_(fd), pos_(pos), end_(end) {}
  enum class Step { kRecord, kEnd, kTorn, kBad, kIoError };
  // kTorn: the region ends inside a record; kBad: a record fails its check.
  Step next(RecordView& r) {
    if (pos_ >= end_) return Step::kEnd;
    for (;;) {
      const std::string_view have(buf_.data() + at_, filled_ - at_);
      const Parse p = parse_record(have, r);
      if (p == Parse::kOk) {
        at_ += r.size;
        record_pos_ = pos_;
        pos_ += r.size;
        return Step::kRecord;
      }
      if (p == Parse::kBad) return Step::kBad;
      // Short: read more, unless the region has no more.
      const uint64_t buffered_end = pos_ + have.size();
      if (buffered_end >= end_) return Step::kTorn;
      size_t want = kReadChunk;
      if (have.size() >= kRecordHeaderBytes) {
        uint32_t len = 0;
        for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(have[i])} << (8 * i);
        want = std::max(want, kRecordHeaderBytes + size_t{len});
      }
      std::memmove(buf_.data(), buf_.data() + at_, have.size());
      filled_ = have.size();
      at_ = 0;
      const size_t cap = std::max(want, filled_ + kReadChunk);
      if (buf_.size() < cap) buf_.resize(cap);
      const size_t room = static_cast<size_t>(std::min<uint64_t>(buf_.size() - filled_, end_ - buffered_end));
      ssize_t n;
      do {
        n = ::pread(fd_, buf_.data() + filled_, room, static_cast<off_t>(buffered_end));
      } while (n < 0 && errno == EINTR);
      if (n < 0) {
        err_ = errno;
        return Step::kIoError;
      }
      if (n == 0) return Step::kTorn;  // the file is shorter than the region
      filled_ += static_cast<size_t>(n);
    }
  }
  uint64_t pos() const { return pos_; }             // just past the last record returned
  uint64_t record_pos() const { return record_pos_; }  // start of the last record returned
  int error() const { return err_; }

 private:
  int fd_;
  uint64_t pos_, end_;
  uint64_t record_pos_ = 0;
  std::string buf_;
  size_t at_ = 0, filled_ = 0;
  int err_ = 0;
};

// The byte to start reading at for the first record with offset >= `from`.
uint64_t start_pos(const SegmentMeta& m, uint64_t from) {
  auto it = std::upper_bound(m.index.begin(), m.index.end(), from,
                             [](uint64_t off, const IndexEntry& e) { return off < e.offset; });
  if (it == m.index.begin()) return kSegmentHeaderBytes;
  return std::prev(it)->pos;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

SegmentLog::SegmentLog(const SegmentLogOptions& opts) : opts_(opts) {}

SegmentLog::~SegmentLog() {
  for (auto& [k, p] : parts_) {
    if (p->fd >= 0) {
      // kill -9 keeps what was written; a clean stop also syncs it.
      ::fdatasync(p->fd);
      ::close(p->fd);
    }
  }
}

Result<std::unique_ptr<SegmentLog>> SegmentLog::open(const SegmentLogOptions& opts) {
  if (opts.dir.empty()) return Error{ErrorCode::kInternal, "segment log: no folder given"};
  std::error_code ec;
  const bool existed = std::filesystem::exists(opts.dir, ec);
  std::filesystem::create_directories(opts.dir, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "segment log: cannot create " + opts.dir + ": " + ec.message()};
  if (!existed) {
    // The new folder's entry is in its parent: durable only once the parent is synced.
    const auto parent = std::filesystem::absolute(opts.dir, ec).parent_path();
    if (Status s = sync_dir(parent.string()); !s) return s.error();
  }
  SegmentLogOptions o = opts;
  o.segment_bytes = std::clamp<uint64_t>(o.segment_bytes, 4096, 1ull << 30);
  o.index_every_bytes = std::max<uint32_t>(o.index_every_bytes, 512);
  return std::unique_ptr<SegmentLog>(new SegmentLog(o));
}

std::string SegmentLog::partition_dir(const ChannelId& key) const {
  return opts_.dir + "/" + folder_name(key);
}

SegmentLog::Part& SegmentLog::part(const ChannelId& key) {
  const std::string& k = ChannelId::scratch_key(key.tenant, key.channel);
  {
    std::shared_lock lock(map_mu_);
    if (auto it = parts_.find(k); it != parts_.end()) return *it->second;
  }
  std::unique_lock lock(map_mu_);
  auto& slot = parts_[k];
  if (!slot) {
    slot = std::make_unique<Part>();
    slot->id = key;
    slot->dir = partition_dir(key);
  }
  return *slot;
}

Status SegmentLog::ensure_loaded(Part& p) {
  {
    std::shared_lock lock(p.mu);
    if (p.loaded) return p.damaged ? Status(*p.damaged) : Status::ok();
  }
  std::unique_lock lock(p.mu);
  if (!p.loaded) {
    if (Status s = load_locked(p); !s) return s;
  }
  return p.damaged ? Status(*p.damaged) : Status::ok();
}

void SegmentLog::mark_damaged(Part& p, const std::string& what) {
  spdlog::error("store: damaged segment in {} ({}): topic partition {} of tenant {} is unreadable "
                "until the damaged files are removed (docs/operations.md \"Damaged data\")",
                p.dir, what, p.id.channel, p.id.tenant);
  p.damaged = unreadable();
  if (opts_.on_damage) opts_.on_damage(p.dir, what);
}

Status SegmentLog::load_locked(Part& p) {
  p.segs.clear();
  p.last_off = 0;
  p.damaged.reset();
  if (p.fd >= 0) ::close(p.fd);
  p.fd = -1;
  p.sealed_tail = false;
  p.next_index_pos = 0;
  std::vector<uint64_t> bases;
  DIR* d = ::opendir(p.dir.c_str());
  if (d == nullptr) {
    if (errno != ENOENT) return io_error("cannot open", p.dir, errno);
    p.dir_made = false;
    p.loaded = true;
    return Status::ok();
  }
  while (dirent* e = ::readdir(d)) {
    uint64_t base = 0;
    if (parse_segment_file_name(e->d_name, base)) bases.push_back(base);
  }
  ::closedir(d);
  p.dir_made = true;
  std::sort(bases.begin(), bases.end());
  std::string idx;
  for (size_t i = 0; i < bases.size(); ++i) {
    const bool newest = i + 1 == bases.size();
    const std::string path = p.dir + "/" + segment_file_name(bases[i]);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return io_error("cannot stat", path, errno);
    SegmentMeta m;
    m.base = bases[i];
    bool from_index = false;
    if (!newest) {
      // A sealed segment: its index file, when it checks and matches.
      std::error_code ec;
      const std::string ipath = p.dir + "/" + index_file_name(bases[i]);
      const Fd ifd(::open(ipath.c_str(), O_RDONLY | O_CLOEXEC));
      struct stat ist {};
      if (ifd.get() >= 0 && ::fstat(ifd.get(), &ist) == 0 && ist.st_size < (64 << 20)) {
        idx.resize(static_cast<size_t>(ist.st_size));
        from_index = ::pread(ifd.get(), idx.data(), idx.size(), 0) == static_cast<ssize_t>(idx.size()) &&
                     decode_index(idx, m) && m.base == bases[i] &&
                     m.bytes == static_cast<uint64_t>(st.st_size);
      }
      if (!from_index) {
        m = SegmentMeta{};
        m.base = bases[i];
      }
    }
    if (!from_index) {
      uint64_t valid_end = 0;
      Status s = scan_segment(path, m, newest, valid_end);
      if (!s) {
        if (s.error().code == ErrorCode::kInternal) {
          mark_damaged(p, path + ": " + s.error().msg);
          p.loaded = true;
          return Status::ok();
        }
        return s;
      }
      if (valid_end < static_cast<uint64_t>(st.st_size)) {
        // A torn tail: written, never acknowledged (the write was under way).
        if (valid_end < kSegmentHeaderBytes) {
          if (::unlink(path.c_str()) != 0) return io_error("cannot delete", path, errno);
          if (Status ds = sync_dir(p.dir); !ds) return ds;
          spdlog::warn("store: segment {} held no whole header ({} bytes); deleted", path, st.st_size);
          torn_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const Fd wfd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (wfd.get() < 0 || ::ftruncate(wfd.get(), static_cast<off_t>(valid_end)) != 0 ||
            ::fdatasync(wfd.get()) != 0) {
          return io_error("cannot cut the torn tail of", path, errno);
        }
        torn_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("store: cut the torn tail of {} at byte {} ({} bytes after the last whole "
                     "record, which is offset {})",
                     path, valid_end, static_cast<uint64_t>(st.st_size) - valid_end, m.last);
      }
    }
    if (!p.segs.empty() && m.last != 0 && m.base <= p.last_off) {
      mark_damaged(p, path + ": offsets overlap the segment before it");
      p.loaded = true;
      return Status::ok();
    }
    if (m.last != 0) p.last_off = m.last;
    p.segs.push_back(std::move(m));
  }
  if (!p.segs.empty()) {
    const SegmentMeta& back = p.segs.back();
    p.sealed_tail = back.bytes >= opts_.segment_bytes;
    p.next_index_pos = back.index.empty() ? 0 : back.index.back().pos + opts_.index_every_bytes;
  }
  p.loaded = true;
  return Status::ok();
}

Status SegmentLog::scan_segment(const std::string& path, SegmentMeta& m, bool newest,
                                uint64_t& valid_end) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error("cannot stat", path, errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  char hdr[kSegmentHeaderBytes];
  uint64_t base = 0;
  const ssize_t got = size >= kSegmentHeaderBytes ? ::pread(fd.get(), hdr, sizeof hdr, 0) : 0;
  if (got != static_cast<ssize_t>(sizeof hdr) ||
      !parse_segment_header(std::string_view(hdr, sizeof hdr), base)) {
    if (newest && size < kSegmentHeaderBytes) {
      valid_end = 0;
      return Status::ok();
    }
    return Error{ErrorCode::kInternal, "no segment header"};
  }
  if (base != m.base) return Error{ErrorCode::kInternal, "the header names another base offset"};
  m.bytes = kSegmentHeaderBytes;
  m.index.clear();
  RecordReader reader(fd.get(), kSegmentHeaderBytes, size);
  RecordView r;
  StoredMessage msg;
  uint64_t next_index = 0;
  for (;;) {
    const auto step = reader.next(r);
    if (step == RecordReader::Step::kEnd) break;
    if (step == RecordReader::Step::kIoError) return io_error("cannot read", path, reader.error());
    bool bad = step != RecordReader::Step::kRecord;
    if (!bad) {
      bad = r.offset < m.base || (m.last != 0 && r.offset <= m.last) ||
            !decode_message_value(r.payload, msg);
    }
    if (bad) {
      if (!newest) {
        return Error{ErrorCode::kInternal, "a record at byte " + std::to_string(reader.pos()) +
                                               " is short or fails its checksum"};
      }
      break;  // the torn tail starts here
    }
    const uint64_t at = reader.record_pos();
    if (at >= next_index) {
      m.index.push_back(IndexEntry{r.offset, static_cast<uint32_t>(at)});
      next_index = at + opts_.index_every_bytes;
    }
    m.last = r.offset;
    m.max_ts = std::max(m.max_ts, msg.ts_ms);
    m.has_ids = m.has_ids || !msg.id.empty();
    ++m.records;
    m.bytes = reader.pos();
  }
  valid_end = m.bytes;
  return Status::ok();
}

// --- Writer -----------------------------------------------------------------

SegmentLog::Staged SegmentLog::stage(const AppendRequest& req, int64_t now_ms, Status& why) {
  Part& p = part(req.key);
  if (Status s = ensure_loaded(p); !s) {
    why = s;
    std::shared_lock lock(p.mu);
    // A damaged partition refuses its own appends; an I/O error fails the store.
    return p.loaded && p.damaged ? Staged::kRejected : Staged::kFailed;
  }
  const StoredMessage& msg = req.msg;
  if (msg.seq <= (p.staging ? p.delta.last : p.last_off)) {
    why = Error{ErrorCode::kInternal, std::string(kStaleSeqMessage)};
    return Staged::kRejected;
  }
  if (!p.staging) {
    p.staging = true;
    touched_.push_back(&p);
    p.delta = SegmentMeta{};
    p.staged.clear();
    if (p.segs.empty() || p.sealed_tail) {
      p.staged_base = msg.seq;
      p.write_at = kSegmentHeaderBytes;
      p.next_index_pos = 0;
    } else {
      p.staged_base = 0;
      p.write_at = p.segs.back().bytes;
    }
  }
  const uint64_t pos = p.write_at + p.staged.size();
  if (pos >= p.next_index_pos) {
    p.delta.index.push_back(IndexEntry{msg.seq, static_cast<uint32_t>(pos)});
    p.next_index_pos = pos + opts_.index_every_bytes;
  }
  append_record(p.staged, msg, scratch_);
  p.delta.last = msg.seq;
  p.delta.max_ts = std::max(p.delta.max_ts, msg.ts_ms);
  p.delta.has_ids = p.delta.has_ids || !msg.id.empty();
  ++p.delta.records;
  p.limit = req.history_limit;
  p.last_write_ms = now_ms;
  return Staged::kOk;
}

Status SegmentLog::write_staged(Part& p) {
  if (p.staged_base != 0) {
    if (!p.dir_made) {
      if (::mkdir(p.dir.c_str(), 0755) != 0 && errno != EEXIST) return io_error("cannot create", p.dir, errno);
      if (Status s = sync_dir(opts_.dir); !s) return s;
      p.dir_made = true;
    }
    if (p.fd >= 0) ::close(p.fd);
    const std::string path = p.dir + "/" + segment_file_name(p.staged_base);
    p.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (p.fd < 0) return io_error("cannot create", path, errno);
    std::string hdr;
    append_segment_header(hdr, p.staged_base);
    iovec iov[2] = {{hdr.data(), hdr.size()}, {p.staged.data(), p.staged.size()}};
    const size_t total = hdr.size() + p.staged.size();
    ssize_t w = ::pwritev(p.fd, iov, 2, 0);
    if (w < 0) return io_error("cannot write", path, errno);
    if (static_cast<size_t>(w) < total) {
      // Short: the rest, as plain writes.
      if (static_cast<size_t>(w) < hdr.size()) {
        if (Status s = pwrite_all(p.fd, hdr.data() + w, hdr.size() - static_cast<size_t>(w),
                                  static_cast<uint64_t>(w), path); !s) return s;
        w = static_cast<ssize_t>(hdr.size());
      }
      const size_t done = static_cast<size_t>(w) - hdr.size();
      if (Status s = pwrite_all(p.fd, p.staged.data() + done, p.staged.size() - done,
                                static_cast<uint64_t>(w), path); !s) return s;
    }
    // The new file's entry, durable before anything in it is acknowledged.
    return sync_dir(p.dir);
  }
  const std::string path = p.dir + "/" + segment_file_name(p.segs.back().base);
  if (p.fd < 0) {
    p.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (p.fd < 0) return io_error("cannot open", path, errno);
  }
  return pwrite_all(p.fd, p.staged.data(), p.staged.size(), p.write_at, path);
}

Status SegmentLog::commit(int64_t now_ms) {
  check_may_block();
  Status st;
  for (Part* p : touched_) {
    st = write_staged(*p);
    if (!st) break;
  }
  if (st && opts_.sync) {
    for (Part* p : touched_) {
      if (::fdatasync(p->fd) != 0) {
        st = io_error("cannot fdatasync", p->dir, errno);
        break;
      }
    }
  }
  if (!st) {
    // What reached the files is unknown: each touched partition is read back
    // (its torn tail cut) before it is written again.
    for (Part* p : touched_) {
      std::unique_lock lock(p->mu);
      p->loaded = false;
      p->staging = false;
      p->staged.clear();
      if (p->fd >= 0) ::close(p->fd);
      p->fd = -1;
    }
    touched_.clear();
    return st;
  }
  for (Part* p : touched_) {
    {
      std::unique_lock lock(p->mu);
      if (p->staged_base != 0) {
        p->segs.emplace_back().base = p->staged_base;
        p->sealed_tail = false;
      }
      SegmentMeta& m = p->segs.back();
      m.bytes = p->write_at + p->staged.size();
      m.last = p->delta.last;
      m.max_ts = std::max(m.max_ts, p->delta.max_ts);
      m.records += p->delta.records;
      m.has_ids = m.has_ids || p->delta.has_ids;
      m.index.insert(m.index.end(), p->delta.index.begin(), p->delta.index.end());
      p->last_off = p->delta.last;
    }
    p->staging = false;
    p->staged_base = 0;
    p->staged.clear();
    if (p->staged.capacity() > kKeepStagedBytes) p->staged.shrink_to_fit();
    const SegmentMeta& m = p->segs.back();
    // By count too, so that retention's granularity is the store policy's slack;
    // not below 1/64 of segment_bytes: a young partition's limit is its offset
    // (retention_s, Partition::limit_for), which would seal segments of a few records.
    if (m.bytes >= opts_.segment_bytes ||
        (m.records >= history_slack(p->limit) && m.bytes >= opts_.segment_bytes / 64)) {
      if (Status s = seal(*p); !s && st) st = s;
    }
    if (Status s = trim(*p); !s && st) st = s;
  }
  touched_.clear();
  evict_idle(now_ms);
  return st;
}

void SegmentLog::discard() {
  for (Part* p : touched_) {
    p->staging = false;
    p->staged_base = 0;
    p->staged.clear();
    // The index position the staged records took is given back.
    p->next_index_pos = p->segs.empty() || p->segs.back().index.empty()
                            ? 0
                            : p->segs.back().index.back().pos + opts_.index_every_bytes;
  }
  touched_.clear();
}

Status SegmentLog::seal(Part& p) {
  const SegmentMeta& m = p.segs.back();
  const std::string ipath = p.dir + "/" + index_file_name(m.base);
  // Sealed segments are whole on disk whatever the fsync setting: only the newest
  // can hold a torn tail, which is what recovery looks for.
  if (!opts_.sync && ::fdatasync(p.fd) != 0) return io_error("cannot fdatasync", p.dir, errno);
  std::string bytes;
  encode_index(m, bytes);
  const Fd ifd(::open(ipath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (ifd.get() < 0) return io_error("cannot create", ipath, errno);
  if (Status s = pwrite_all(ifd.get(), bytes.data(), bytes.size(), 0, ipath); !s) return s;
  if (::fdatasync(ifd.get()) != 0) return io_error("cannot fdatasync", ipath, errno);
  ::close(p.fd);
  p.fd = -1;
  p.sealed_tail = true;
  // The index's entry: a lost one costs a scan of the segment at the next open.
  return sync_dir(p.dir);
}

Status SegmentLog::trim(Part& p) {
  if (p.segs.size() < 2) return Status::ok();
  const uint64_t oldest = p.segs.front().base;
  if (p.last_off - oldest + 1 <= history_max_held(p.limit)) return Status::ok();
  const uint64_t keep_from = p.last_off - history_keep(p.limit) + 1;
  size_t n = 0;
  while (n + 1 < p.segs.size() && p.segs[n].last < keep_from) ++n;
  if (n == 0) return Status::ok();
  std::vector<uint64_t> gone;
  {
    std::unique_lock lock(p.mu);
    for (size_t i = 0; i < n; ++i) gone.push_back(p.segs[i].base);
    p.segs.erase(p.segs.begin(), p.segs.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // Readers that opened a deleted file go on reading it; new ones no longer see it.
  for (uint64_t base : gone) {
    for (const std::string& name : {segment_file_name(base), index_file_name(base)}) {
      const std::string path = p.dir + "/" + name;
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("cannot delete", path, errno);
    }
  }
  return sync_dir(p.dir);
}

Status SegmentLog::reset() {
  discard();
  {
    std::shared_lock lock(map_mu_);
    for (auto& [k, p] : parts_) {
      std::unique_lock plock(p->mu);
      p->loaded = false;
      if (p->fd >= 0) ::close(p->fd);
      p->fd = -1;
    }
  }
  // Writable again only once a write and its sync succeed in the folder.
  const std::string probe = opts_.dir + "/PROBE";
  const Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return io_error("cannot create", probe, errno);
  if (::write(fd.get(), "x", 1) != 1 || ::fdatasync(fd.get()) != 0) return io_error("cannot write", probe, errno);
  ::unlink(probe.c_str());
  return Status::ok();
}

void SegmentLog::evict_idle(int64_t now_ms) {
  if (now_ms < next_evict_ms_) return;
  next_evict_ms_ = now_ms + opts_.idle_ms / 2;
  std::shared_lock lock(map_mu_);
  for (auto& [k, p] : parts_) {
    if (p->fd >= 0 && !p->staging && now_ms - p->last_write_ms > opts_.idle_ms) {
      ::close(p->fd);
      p->fd = -1;
    }
  }
}

// --- Readers ----------------------------------------------------------------

Status SegmentLog::scan_range(int fd, uint64_t pos, uint64_t end, uint64_t from, uint64_t until,
                              size_t max, std::vector<StoredMessage>& out, const std::string& path) {
  RecordReader reader(fd, pos, end);
  RecordView r;
  size_t added = 0;
  while (added < max) {
    const auto step = reader.next(r);
    if (step == RecordReader::Step::kEnd) break;
    if (step == RecordReader::Step::kIoError) return io_error("cannot read", path, reader.error());
    if (step != RecordReader::Step::kRecord) {
      spdlog::error("store: segment {}: the record at byte {} fails its checksum", path, reader.pos());
      return unreadable();
    }
    if (r.offset >= until) break;
    if (r.offset < from) continue;
    StoredMessage& m = out.emplace_back();
    if (!decode_message_value(r.payload, m)) {
      out.pop_back();
      spdlog::error("store: segment {}: the record of offset {} does not decode", path, r.offset);
      return unreadable();
    }
    m.seq = r.offset;
    ++added;
  }
  return Status::ok();
}

Result<ChannelRecovery> SegmentLog::recover(const ChannelId& key, int64_t dedupe_cutoff_ms) {
  check_may_block();
  Part& p = part(key);
  if (Status s = ensure_loaded(p); !s) return s.error();
  ChannelRecovery out;
  size_t i = 0;
  {
    std::shared_lock lock(p.mu);
    out.last_seq = p.last_off;
    i = p.segs.size();
  }
  std::vector<StoredMessage> msgs;
  while (i > 0) {
    --i;
    uint64_t end = 0;
    std::string path;
    int fd = -1;
    {
      std::shared_lock lock(p.mu);
      if (i >= p.segs.size()) continue;  // trimmed meanwhile (not while recovering: contract)
      const SegmentMeta& m = p.segs[i];
      if (m.max_ts < dedupe_cutoff_ms) break;
      if (!m.has_ids) continue;
      end = m.bytes;
      path = p.dir + "/" + segment_file_name(m.base);
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return io_error("cannot open", path, errno);
    }
    const Fd hold(fd);
    msgs.clear();
    if (Status s = scan_range(fd, kSegmentHeaderBytes, end, 0, UINT64_MAX, SIZE_MAX, msgs, path); !s) {
      return s.error();
    }
    for (StoredMessage& m : msgs) {
      if (m.id.empty() || m.ts_ms < dedupe_cutoff_ms) continue;
      out.dedupe.push_back(DedupeEntry{std::move(m.from), std::move(m.id), m.seq, m.ts_ms});
    }
  }
  return out;
}

Result<std::vector<StoredMessage>> SegmentLog::read_after(const ChannelId& key, uint64_t after,
                                                          uint32_t limit) {
  check_may_block();
  std::vector<StoredMessage> out;
  if (limit == 0 || after == UINT64_MAX) return out;
  Part& p = part(key);
  if (Status s = ensure_loaded(p); !s) return s.error();
  uint64_t next = after + 1;
  while (out.size() < limit) {
    uint64_t pos = 0, end = 0, seg_last = 0;
    std::string path;
    int fd = -1;
    {
      std::shared_lock lock(p.mu);
      auto it = std::partition_point(p.segs.begin(), p.segs.end(), [&](const SegmentMeta& m) {
        return m.last < next;
      });
      if (it == p.segs.end() || it->last == 0) break;
      // Retention deleted the segment after the one just read: stop at the gap
      // (one read never skips events that were there when it began).
      if (!out.empty() && it->base > next) break;
      pos = start_pos(*it, next);
      end = it->bytes;
      seg_last = it->last;
      path = p.dir + "/" + segment_file_name(it->base);
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return io_error("cannot open", path, errno);
    }
    const Fd hold(fd);
    if (Status s = scan_range(fd, pos, end, next, UINT64_MAX, limit - out.size(), out, path); !s) {
      return s.error();
    }
    next = seg_last + 1;
  }
  return out;
}

Result<std::vector<StoredMessage>> SegmentLog::read_before(const ChannelId& key, uint64_t before,
                                                           uint32_t limit) {
  check_may_block();
  std::vector<StoredMessage> out;
  if (limit == 0 || before == 0) return out;
  Part& p = part(key);
  if (Status s = ensure_loaded(p); !s) return s.error();
  std::vector<std::vector<StoredMessage>> chunks;  // newest first
  size_t need = limit;
  uint64_t hi = before;  // exclusive
  std::vector<StoredMessage> got;
  while (need > 0 && hi > 0) {
    uint64_t base = 0, end = 0, lo = 0, pos = 0;
    std::string path;
    int fd = -1;
    {
      std::shared_lock lock(p.mu);
      auto it = std::partition_point(p.segs.begin(), p.segs.end(),
                                     [&](const SegmentMeta& m) { return m.base < hi; });
      if (it == p.segs.begin()) break;
      const SegmentMeta& m = *std::prev(it);
      base = m.base;
      if (m.last == 0) {
        hi = base;
        continue;
      }
      lo = std::max(base, hi > need ? hi - need : 0);
      pos = start_pos(m, lo);
      end = m.bytes;
      path = p.dir + "/" + segment_file_name(base);
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return io_error("cannot open", path, errno);
    }
    const Fd hold(fd);
    got.clear();
    if (Status s = scan_range(fd, pos, end, lo, hi, SIZE_MAX, got, path); !s) return s.error();
    if (got.size() < need && lo > base) {
      // Offsets jumped (an accepted loss): the newest `need` below hi start earlier.
      got.clear();
      if (Status s = scan_range(fd, kSegmentHeaderBytes, end, base, hi, SIZE_MAX, got, path); !s) {
        return s.error();
      }
    }
    if (got.size() > need) got.erase(got.begin(), got.end() - static_cast<std::ptrdiff_t>(need));
    need -= got.size();
    chunks.push_back(std::move(got));
    got = {};
    hi = base;
  }
  for (auto c = chunks.rbegin(); c != chunks.rend(); ++c) {
    for (auto& m : *c) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace parley::store::segment
