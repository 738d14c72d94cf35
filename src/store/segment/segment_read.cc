// Reads by offset: the sparse index finds the first record, then records are
// read in order up to the end the reader saw when it started.
#include "store/segment/segment_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "store/blocking_check.h"
#include "store/record_codec.h"
#include "store/segment/segment_part.h"

namespace parley::store::segment {

using namespace detail;

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
