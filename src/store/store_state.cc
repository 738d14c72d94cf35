#include "store/store_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace parley::store {
namespace {

constexpr std::string_view kHeader = "parley-store-state 1";

Error io_error(const std::string& what, const std::string& path) {
  return Error{ErrorCode::kUnavailable,
               fmt::format("embedded store: cannot {} {}: {}", what, path, std::strerror(errno))};
}

bool parse_u64(std::string_view s, uint64_t& v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string current_boot_id() {
  const char* path = std::getenv("PARLEY_BOOT_ID_PATH");
  std::ifstream in(path && *path ? path : "/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  // A value of one line and no spaces: it is stored as one.
  for (char& c : id) {
    if (c == ' ') c = '-';
  }
  return id;
}

Status StoreStateFile::load() {
  data_ = {};
  std::ifstream in(path());
  if (!in) {
    if (errno == ENOENT) return Status::ok();
    return io_error("read", path());
  }
  std::string line;
  bool header = false, epoch = false, ceiling = false, floor = false, clean = false;
  while (std::getline(in, line)) {
    if (!header) {
      header = line == kHeader;
      if (!header) break;
      continue;
    }
    const auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    std::string_view key(line.data(), sp), val(line.data() + sp + 1, line.size() - sp - 1);
    if (key == "boot") {
      data_.boot = std::string(val);
      continue;
    }
    if (key == "damaged") {
      if (data_.damaged.size() < kMaxDamagedChannels) data_.damaged.emplace_back(val);
      continue;
    }
    uint64_t v = 0;
    if (!parse_u64(val, v)) break;
    if (key == "epoch" && v >= 1 && v <= UINT32_MAX) {
      data_.epoch = static_cast<uint32_t>(v);
      epoch = true;
    } else if (key == "seq_ceiling") {
      data_.seq_ceiling = v;
      ceiling = true;
    } else if (key == "loss_floor") {
      data_.loss_floor = v;
      floor = true;
    } else if (key == "clean" && v <= 1) {
      data_.clean = v == 1;
      clean = true;
    }
  }
  if (!(header && epoch && ceiling && floor && clean)) {
    return Error{ErrorCode::kInternal,
                 "embedded store: " + path() +
                     " is damaged (it records the store's epoch and seq ceiling); restore it "
                     "from a backup, or remove it together with the store to start empty"};
  }
  return Status::ok();
}

Status StoreStateFile::save() {
  std::string text =
      fmt::format("{}\nepoch {}\nseq_ceiling {}\nloss_floor {}\nclean {}\n", kHeader, data_.epoch,
                  data_.seq_ceiling, data_.loss_floor, data_.clean ? 1 : 0) +
      // Last: a build that does not know the key reads every line before it.
      (data_.boot.empty() ? std::string() : "boot " + data_.boot + "\n");
  for (const auto& ch : data_.damaged) text += "damaged " + ch + "\n";
  const std::string tmp = path() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("create", tmp);
  const bool ok = write_all(fd, text) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    errno = saved;
    Error e = io_error("write", tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path().c_str()) != 0) return io_error("rename", tmp);
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return io_error("open", dir_);
  const bool synced = ::fsync(dfd) == 0;
  ::close(dfd);
  if (!synced) return io_error("fsync", dir_);
  return Status::ok();
}

Status StoreStateFile::reserve(uint64_t seq) {
  if (seq <= data_.seq_ceiling) return Status::ok();
  const uint64_t before = data_.seq_ceiling;
  data_.seq_ceiling = seq + kSeqLease;
  Status s = save();
  if (!s) data_.seq_ceiling = before;
  return s;
}

}  // namespace parley::store
