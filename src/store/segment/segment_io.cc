#include "store/segment/segment_part.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace parley::store::segment::detail {

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

uint64_t start_pos(const SegmentMeta& m, uint64_t from) {
  auto it = std::upper_bound(m.index.begin(), m.index.end(), from,
                             [](uint64_t off, const IndexEntry& e) { return off < e.offset; });
  if (it == m.index.begin()) return kSegmentHeaderBytes;
  return std::prev(it)->pos;
}

}  // namespace parley::store::segment::detail
