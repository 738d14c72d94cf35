// Internal to the segment log's files (segment_log.cc: partitions and the
// writer; segment_recovery.cc: loading a partition and cutting a torn tail;
// segment_read.cc: reads by offset): a partition's state and the file helpers
// the three share. Not for use outside src/store/segment.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/segment/segment_format.h"
#include "store/segment/segment_log.h"

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

namespace detail {

constexpr int kRetryMs = 1000;
constexpr size_t kReadChunk = 256 << 10;
constexpr size_t kKeepStagedBytes = 1 << 20;

Error io_error(const std::string& what, const std::string& path, int err);
Error unreadable();
Status sync_dir(const std::string& dir);
Status pwrite_all(int fd, const char* p, size_t n, uint64_t at, const std::string& path);
// The byte to start reading at for the first record with offset >= `from`.
uint64_t start_pos(const SegmentMeta& m, uint64_t from);

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

}  // namespace detail
}  // namespace parley::store::segment
