// A real, small file system for fault tests (TESTING.md "Faults"): a tmpfs or a
// loop-mounted ext4 image, mounted on a folder the test gives (usually a
// ServerProcess's data_dir before the server starts). Needs root; tests skip
// without it. Unmounted by the destructor, also when the test failed (lazily, so a
// server still holding files cannot keep it mounted).
//
// Free space is taken away and given back with a ballast file, which works the
// same on both kinds.
#pragma once

#include <cstdint>
#include <string>

namespace parley::testing {

class SmallDisk {
 public:
  enum class Kind { kTmpfs, kExt4 };

  // Mounts a `size_mb` file system of `kind` on `mount_point` (created when missing).
  SmallDisk(Kind kind, std::string mount_point, uint64_t size_mb);
  ~SmallDisk();
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  // False (with why()) when the file system could not be made: not root, no mkfs.
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return mount_point_; }

  // Grows the ballast until at most `free_bytes` remain free (0: full).
  void fill_leaving(uint64_t free_bytes);
  // Removes the ballast: the space it held is free again.
  void free_ballast();
  uint64_t free_bytes() const;

  static const char* name(Kind k) { return k == Kind::kTmpfs ? "tmpfs" : "ext4"; }

 private:
  std::string mount_point_;
  std::string image_;  // ext4: the image file
  bool mounted_ = false;
  std::string why_;
};

}  // namespace parley::testing
