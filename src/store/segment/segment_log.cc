#include "store/segment/segment_log.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/fnv1a.h"
#include "store/blocking_check.h"
#include "store/segment/segment_part.h"
#include "store/store_policy.h"

namespace parley::store::segment {

using namespace detail;

namespace {

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

}  // namespace parley::store::segment
