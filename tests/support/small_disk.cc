#include "support/small_disk.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace parley::testing {
namespace {

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

std::string ballast_path(const std::string& mp) { return mp + "/ballast"; }

}  // namespace

SmallDisk::SmallDisk(Kind kind, std::string mount_point, uint64_t size_mb)
    : mount_point_(std::move(mount_point)) {
  std::error_code ec;
  std::filesystem::create_directories(mount_point_, ec);
  if (geteuid() != 0) {
    why_ = "needs root to mount a file system";
    return;
  }
  if (kind == Kind::kTmpfs) {
    const std::string opts = "size=" + std::to_string(size_mb) + "m";
    if (::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      why_ = std::string("mount tmpfs: ") + std::strerror(errno);
      return;
    }
  } else {
    image_ = mount_point_ + ".img";
    if (run("truncate -s " + std::to_string(size_mb) + "M " + image_) != 0 ||
        run("mkfs.ext4 -q -F -m 0 " + image_) != 0 ||
        run("mount -o loop " + image_ + " " + mount_point_) != 0) {
      why_ = "could not make and loop-mount an ext4 image (mkfs.ext4, losetup)";
      ::unlink(image_.c_str());
      return;
    }
  }
  mounted_ = true;
}

SmallDisk::~SmallDisk() {
  if (mounted_) {
    // MNT_DETACH: a server still running (the test failed) must not keep it mounted;
    // the loop device goes with the last reference.
    ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
  if (!image_.empty()) ::unlink(image_.c_str());
}

uint64_t SmallDisk::free_bytes() const {
  struct statvfs fs {};
  if (::statvfs(mount_point_.c_str(), &fs) != 0) return 0;
  // The server runs as root too, and root may use blocks reserved for it.
  return static_cast<uint64_t>(geteuid() == 0 ? fs.f_bfree : fs.f_bavail) * fs.f_frsize;
}

void SmallDisk::fill_leaving(uint64_t free_bytes_wanted) {
  int fd = ::open(ballast_path(mount_point_).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  std::vector<char> block(64 * 1024, 'b');
  for (;;) {
    const uint64_t free_now = free_bytes();
    if (free_now <= free_bytes_wanted) break;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), free_now - free_bytes_wanted));
    if (::write(fd, block.data(), std::max<size_t>(n, 1)) <= 0) break;  // ENOSPC: full
  }
  ::fsync(fd);
  ::close(fd);
}

void SmallDisk::free_ballast() {
  ::unlink(ballast_path(mount_point_).c_str());
  ::sync();
}

}  // namespace parley::testing
