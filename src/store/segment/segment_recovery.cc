// Loading a partition: its segments in order, each checked record by record;
// a torn tail of the newest is cut, damage before it marks the partition.
#include "store/segment/segment_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "store/blocking_check.h"
#include "store/record_codec.h"
#include "store/segment/segment_part.h"

namespace parley::store::segment {

using namespace detail;

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

Status SegmentLog::mark_range(int fd, uint64_t end, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                              std::vector<DedupeMark>& out, const std::string& path) {
  // One record at a time into reused strings: what stays is 24 bytes per id.
  RecordReader reader(fd, kSegmentHeaderBytes, end);
  RecordView r;
  StoredMessage m;
  std::string key;
  for (;;) {
    const auto step = reader.next(r);
    if (step == RecordReader::Step::kEnd) break;
    if (step == RecordReader::Step::kIoError) return io_error("cannot read", path, reader.error());
    if (step != RecordReader::Step::kRecord) {
      spdlog::error("store: segment {}: the record at byte {} fails its checksum", path, reader.pos());
      return unreadable();
    }
    if (!decode_message_value(r.payload, m)) {
      spdlog::error("store: segment {}: the record of offset {} does not decode", path, r.offset);
      return unreadable();
    }
    if (m.id.empty() || m.ts_ms < dedupe_cutoff_ms) continue;
    key.clear();
    DedupeKey::append(key, m.from, m.id);
    out.push_back(DedupeMark{hash(key), r.offset, m.ts_ms});
  }
  return Status::ok();
}

Result<ChannelRecovery> SegmentLog::recover(const ChannelId& key, int64_t dedupe_cutoff_ms,
                                            KeyHashFn hash) {
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
    if (hash != nullptr) {
      if (Status s = mark_range(fd, end, dedupe_cutoff_ms, hash, out.marks, path); !s) return s.error();
      continue;
    }
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

}  // namespace parley::store::segment
