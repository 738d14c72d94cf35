// powerloss_fs: a FUSE file system for the power-loss tests (issue 26).
//
//   powerloss_fs BACKING MOUNTPOINT
//
// Every operation passes through to BACKING at once (reads see everything
// written), but the file system remembers what a power loss would take away,
// the way a disk's volatile cache and the kernel's page cache do (LazyFS's
// model, with directory entries added):
//
// - file data: bytes written, and size changes, since the file's last fsync
//   or fdatasync. The first change after a sync saves the bytes it overwrites
//   (below the size the file had at that sync); appends save nothing.
// - directory entries: a create, mkdir, link, unlink, rmdir or rename is
//   undone unless every directory it changed was fsynced after it. An unlinked
//   (or renamed-over) file is kept in BACKING.trash until that happens.
//
// The test's power switch is the file /.powerloss at the root of the mount:
// writing to it (after the server was killed) restores BACKING to its synced
// state (file data first, then directory entries undone newest first), and
// every later operation fails with EIO; reading it gives what was dropped,
// one "key value" per line. Unmounting (SIGTERM) without a power loss is a
// clean shutdown: everything counts as synced.
//
// Not modelled: torn or reordered writes inside what was synced (a sync is
// all-or-nothing, so this is a well-behaved disk honouring its flushes), and
// a file's fsync persisting its own new directory entry (ext4 does; POSIX
// does not promise it, and neither does this). Runs single-threaded (-s):
// every operation runs on FUSE's one thread, so nothing here takes a lock.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr const char* kControl = "/.powerloss";
// This mount's "boot": a new random id per mount, read-only. The server reads it
// instead of the kernel's boot id when PARLEY_BOOT_ID_PATH points here, so a
// remount after a power loss is a reboot to it, as a real power loss is.
constexpr const char* kBootId = "/.boot_id";

struct FileUndo {
  int fd = -1;             // the backing inode, kept open so it can be restored after a rename or unlink
  off_t synced_size = 0;   // its size at the last sync
  std::map<off_t, std::string> saved;  // disjoint ranges below synced_size: their bytes at the last sync
};

// A change to directory entries, undone at a power loss unless each of its
// directories was fsynced after it.
struct DirOp {
  enum Kind { kCreated, kMadeDir, kRemoved, kRenamed } kind;
  std::string path;             // created / removed entry; rename: the new name
  std::string from;             // rename: the old name
  std::string trash;            // removed entry, or the file a rename replaced ("" none)
  std::set<std::string> dirs;   // directories whose fsync it still waits for
};

struct State {
  std::string backing;
  std::string trash_dir;
  std::unordered_map<ino_t, FileUndo> files;
  std::vector<DirOp> ops;       // oldest first
  uint64_t trash_seq = 0;
  bool crashed = false;
  std::string report;           // what the power loss dropped
  std::string boot_id;
};

State* g = nullptr;

std::string real(const char* path) { return g->backing + path; }

std::string parent_of(const std::string& path) {
  const auto at = path.rfind('/');
  return at == 0 || at == std::string::npos ? "/" : path.substr(0, at);
}

int fail() { return -errno; }

// The undo record of the inode behind `fd`, made at its first change since a sync.
FileUndo* undo_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return nullptr;
  auto it = g->files.find(st.st_ino);
  if (it != g->files.end()) return &it->second;
  FileUndo u;
  u.fd = ::dup(fd);
  u.synced_size = st.st_size;
  return &g->files.emplace(st.st_ino, std::move(u)).first->second;
}

// Saves the synced bytes of [off, off + len) not saved yet.
void save_range(FileUndo& u, off_t off, off_t len) {
  off_t end = std::min<off_t>(off + len, u.synced_size);
  off_t at = off;
  while (at < end) {
    // The saved range at or before `at`, and the next one after it.
    auto next = u.saved.upper_bound(at);
    if (next != u.saved.begin()) {
      auto prev = std::prev(next);
      const off_t prev_end = prev->first + static_cast<off_t>(prev->second.size());
      if (prev_end > at) {
        at = prev_end;
        continue;
      }
    }
    const off_t gap_end = next == u.saved.end() ? end : std::min(end, next->first);
    std::string bytes(static_cast<size_t>(gap_end - at), '\0');
    const ssize_t n = ::pread(u.fd, bytes.data(), bytes.size(), at);
    bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (bytes.empty()) return;
    const off_t got = static_cast<off_t>(bytes.size());
    u.saved.emplace(at, std::move(bytes));
    at += got;
  }
}

void synced(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  auto it = g->files.find(st.st_ino);
  if (it == g->files.end()) return;
  ::close(it->second.fd);
  g->files.erase(it);
}

std::string to_trash(const std::string& path) {
  std::string t = g->trash_dir + "/" + std::to_string(++g->trash_seq);
  if (::rename(real(path.c_str()).c_str(), t.c_str()) != 0) return {};
  return t;
}

void remove_all(const std::string& p) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

void record(DirOp op) {
  if (op.kind == DirOp::kRenamed) op.dirs = {parent_of(op.from), parent_of(op.path)};
  else op.dirs = {parent_of(op.path)};
  g->ops.push_back(std::move(op));
}

// fsync of directory `dir`: the ops now synced everywhere are kept for good.
void dir_synced(const std::string& dir) {
  std::vector<DirOp> kept;
  for (auto& op : g->ops) {
    op.dirs.erase(dir);
    if (op.dirs.empty()) {
      if (!op.trash.empty()) remove_all(op.trash);
    } else {
      kept.push_back(std::move(op));
    }
  }
  g->ops = std::move(kept);
}

void power_loss() {
  uint64_t files = 0, bytes_restored = 0, bytes_cut = 0;
  for (auto& [ino, u] : g->files) {
    struct stat st {};
    ::fstat(u.fd, &st);
    if (st.st_size > u.synced_size) bytes_cut += static_cast<uint64_t>(st.st_size - u.synced_size);
    ::ftruncate(u.fd, u.synced_size);
    for (const auto& [off, b] : u.saved) {
      ::pwrite(u.fd, b.data(), b.size(), off);
      bytes_restored += b.size();
    }
    ::close(u.fd);
    ++files;
  }
  g->files.clear();
  uint64_t entries = 0;
  for (auto it = g->ops.rbegin(); it != g->ops.rend(); ++it, ++entries) {
    const DirOp& op = *it;
    const std::string p = real(op.path.c_str());
    switch (op.kind) {
      case DirOp::kCreated: ::unlink(p.c_str()); break;
      case DirOp::kMadeDir: remove_all(p); break;
      case DirOp::kRemoved: ::rename(op.trash.c_str(), p.c_str()); break;
      case DirOp::kRenamed:
        ::rename(p.c_str(), real(op.from.c_str()).c_str());
        if (!op.trash.empty()) ::rename(op.trash.c_str(), p.c_str());
        break;
    }
  }
  g->ops.clear();
  remove_all(g->trash_dir);
  g->crashed = true;
  g->report = "files " + std::to_string(files) + "\nbytes_cut " + std::to_string(bytes_cut) +
              "\nbytes_restored " + std::to_string(bytes_restored) + "\nentries_undone " +
              std::to_string(entries) + "\n";
}

#define GUARD()                    \
  do {                             \
    if (g->crashed) return -EIO;   \
  } while (0)

int op_getattr(const char* path, struct stat* st, fuse_file_info*) {
  if (std::strcmp(path, kControl) == 0 || std::strcmp(path, kBootId) == 0) {
    std::memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0600;
    st->st_size = static_cast<off_t>(std::strcmp(path, kControl) == 0 ? g->report.size() : g->boot_id.size());
    st->st_nlink = 1;
    return 0;
  }
  GUARD();
  return ::lstat(real(path).c_str(), st) == 0 ? 0 : fail();
}

int op_access(const char* path, int mask) {
  if (std::strcmp(path, kControl) == 0) return 0;
  GUARD();
  return ::access(real(path).c_str(), mask) == 0 ? 0 : fail();
}

int op_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
               fuse_readdir_flags) {
  GUARD();
  DIR* d = ::opendir(real(path).c_str());
  if (!d) return fail();
  while (dirent* e = ::readdir(d)) fill(buf, e->d_name, nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  ::closedir(d);
  return 0;
}

int op_mkdir(const char* path, mode_t mode) {
  GUARD();
  if (::mkdir(real(path).c_str(), mode) != 0) return fail();
  record({DirOp::kMadeDir, path, {}, {}, {}});
  return 0;
}

int op_unlink(const char* path) {
  GUARD();
  std::string t = to_trash(path);
  if (t.empty()) return fail();
  record({DirOp::kRemoved, path, {}, t, {}});
  return 0;
}

int op_rmdir(const char* path) {
  GUARD();
  // Only an empty directory may go: check as rmdir would, then keep it.
  DIR* d = ::opendir(real(path).c_str());
  if (!d) return fail();
  int n = 0;
  while (dirent* e = ::readdir(d)) n += std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..");
  ::closedir(d);
  if (n) return -ENOTEMPTY;
  std::string t = to_trash(path);
  if (t.empty()) return fail();
  record({DirOp::kRemoved, path, {}, t, {}});
  return 0;
}

int op_rename(const char* from, const char* to, unsigned int flags) {
  GUARD();
  if (flags != 0) return -EINVAL;  // RENAME_NOREPLACE / EXCHANGE: not needed by the store
  struct stat st {};
  std::string displaced;
  if (::lstat(real(to).c_str(), &st) == 0) {
    displaced = to_trash(to);
    if (displaced.empty()) return fail();
  }
  if (::rename(real(from).c_str(), real(to).c_str()) != 0) {
    const int e = errno;
    if (!displaced.empty()) ::rename(displaced.c_str(), real(to).c_str());
    return -e;
  }
  record({DirOp::kRenamed, to, from, displaced, {}});
  return 0;
}

int op_link(const char* from, const char* to) {
  GUARD();
  if (::link(real(from).c_str(), real(to).c_str()) != 0) return fail();
  record({DirOp::kCreated, to, {}, {}, {}});
  return 0;
}

int op_chmod(const char* path, mode_t mode, fuse_file_info*) {
  GUARD();
  return ::chmod(real(path).c_str(), mode) == 0 ? 0 : fail();
}

int op_truncate(const char* path, off_t size, fuse_file_info* fi) {
  // Opening the switch for writing truncates it first: nothing to do.
  if (std::strcmp(path, kControl) == 0) return 0;
  GUARD();
  int fd = fi ? static_cast<int>(fi->fh) : ::open(real(path).c_str(), O_RDWR);
  if (fd < 0) return fail();
  FileUndo* u = undo_of(fd);
  struct stat st {};
  ::fstat(fd, &st);
  if (u && size < st.st_size) save_range(*u, size, st.st_size - size);
  const int r = ::ftruncate(fd, size) == 0 ? 0 : fail();
  if (!fi) ::close(fd);
  return r;
}

int op_utimens(const char* path, const struct timespec tv[2], fuse_file_info*) {
  GUARD();
  return ::utimensat(AT_FDCWD, real(path).c_str(), tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : fail();
}

int op_open(const char* path, fuse_file_info* fi) {
  if (std::strcmp(path, kControl) == 0 || std::strcmp(path, kBootId) == 0) {
    fi->fh = static_cast<uint64_t>(-1);
    fi->direct_io = 1;
    return 0;
  }
  GUARD();
  const bool truncating = fi->flags & O_TRUNC;
  // Always read-write (a change saves the bytes it overwrites, read through
  // the same descriptor) and never O_APPEND (the kernel gives every write its
  // offset).
  const int flags = (fi->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_ACCMODE)) | O_RDWR;
  int fd = ::open(real(path).c_str(), flags);
  if (fd < 0) return fail();
  if (truncating) {
    if (FileUndo* u = undo_of(fd)) {
      struct stat st {};
      ::fstat(fd, &st);
      save_range(*u, 0, st.st_size);
    }
    ::ftruncate(fd, 0);
  }
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int op_create(const char* path, mode_t mode, fuse_file_info* fi) {
  GUARD();
  struct stat st {};
  const bool existed = ::lstat(real(path).c_str(), &st) == 0;
  if (existed) return op_open(path, fi);
  int fd = ::open(real(path).c_str(),
                  (fi->flags & ~(O_TRUNC | O_APPEND | O_ACCMODE)) | O_CREAT | O_RDWR, mode);
  if (fd < 0) return fail();
  record({DirOp::kCreated, path, {}, {}, {}});
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int op_read(const char* path, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  if (std::strcmp(path, kControl) == 0 || std::strcmp(path, kBootId) == 0) {
    const std::string& text = std::strcmp(path, kControl) == 0 ? g->report : g->boot_id;
    if (off >= static_cast<off_t>(text.size())) return 0;
    const size_t n = std::min(size, text.size() - static_cast<size_t>(off));
    std::memcpy(buf, text.data() + off, n);
    return static_cast<int>(n);
  }
  GUARD();
  const ssize_t n = ::pread(static_cast<int>(fi->fh), buf, size, off);
  return n >= 0 ? static_cast<int>(n) : fail();
}

int op_write(const char* path, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  if (std::strcmp(path, kControl) == 0) {
    if (!g->crashed) power_loss();
    return static_cast<int>(size);
  }
  GUARD();
  const int fd = static_cast<int>(fi->fh);
  if (FileUndo* u = undo_of(fd)) save_range(*u, off, static_cast<off_t>(size));
  const ssize_t n = ::pwrite(fd, buf, size, off);
  return n >= 0 ? static_cast<int>(n) : fail();
}

int op_statfs(const char*, struct statvfs* st) {
  return ::statvfs(g->backing.c_str(), st) == 0 ? 0 : fail();
}

int op_release(const char*, fuse_file_info* fi) {
  // The control files' handle is -1.
  if (fi->fh != static_cast<uint64_t>(-1)) ::close(static_cast<int>(fi->fh));
  return 0;
}

int op_fsync(const char* path, int, fuse_file_info* fi) {
  if (std::strcmp(path, kControl) == 0) return 0;
  GUARD();
  // The model is the durability: BACKING itself is not synced (a test's
  // machine does not lose power), which keeps an fsync cheap.
  synced(static_cast<int>(fi->fh));
  return 0;
}

int op_fsyncdir(const char* path, int, fuse_file_info*) {
  GUARD();
  dir_synced(path);
  return 0;
}

int op_fallocate(const char*, int mode, off_t off, off_t len, fuse_file_info* fi) {
  GUARD();
  const int fd = static_cast<int>(fi->fh);
  undo_of(fd);  // a size it may change is undone with the file's size
  return ::fallocate(fd, mode, off, len) == 0 ? 0 : fail();
}

void* op_init(fuse_conn_info*, fuse_config* cfg) {
  // No kernel caching of attributes or entries: every stat reaches the model.
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  return nullptr;
}

void op_destroy(void*) {
  // A clean unmount: what was not synced is kept (the kernel would write it).
  for (auto& [ino, u] : g->files) ::close(u.fd);
  g->files.clear();
  remove_all(g->trash_dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: powerloss_fs BACKING MOUNTPOINT [fuse options]\n");
    return 2;
  }
  static State state;
  g = &state;
  state.backing = std::filesystem::absolute(argv[1]).lexically_normal().string();
  if (!state.backing.empty() && state.backing.back() == '/') state.backing.pop_back();
  state.trash_dir = state.backing + ".trash";
  std::random_device rd;
  char id[40];
  std::snprintf(id, sizeof id, "%08x-%08x\n", rd(), rd());
  state.boot_id = id;
  remove_all(state.trash_dir);
  std::filesystem::create_directories(state.trash_dir);

  fuse_operations ops{};
  ops.getattr = op_getattr;
  ops.access = op_access;
  ops.readdir = op_readdir;
  ops.mkdir = op_mkdir;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.rename = op_rename;
  ops.link = op_link;
  ops.chmod = op_chmod;
  ops.truncate = op_truncate;
  ops.utimens = op_utimens;
  ops.open = op_open;
  ops.create = op_create;
  ops.read = op_read;
  ops.write = op_write;
  ops.statfs = op_statfs;
  ops.release = op_release;
  ops.fsync = op_fsync;
  ops.fsyncdir = op_fsyncdir;
  ops.fallocate = op_fallocate;
  ops.init = op_init;
  ops.destroy = op_destroy;

  std::vector<char*> args{argv[0], argv[2], const_cast<char*>("-f"), const_cast<char*>("-s")};
  for (int i = 3; i < argc; ++i) args.push_back(argv[i]);
  return fuse_main(static_cast<int>(args.size()), args.data(), &ops, nullptr);
}
