#include "server/startup_pages.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace parley::server {

namespace {

struct Vma {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  bool candidate = false;  // private, read-only, backed by a file
  size_t rss_kb = 0;
  size_t anon_kb = 0;
};

void release(const Vma& v, ReleasedPages& out) {
  // A page written through the mapping (a relocation, a debugger's breakpoint)
  // is a private anonymous copy: dropping it would lose the write, so such a
  // mapping stays whole. (Private_Dirty also counts page-cache pages the file's
  // own writer has not flushed yet: those live in the page cache and are safe.)
  if (!v.candidate || v.rss_kb == 0 || v.anon_kb != 0) return;
  if (::madvise(reinterpret_cast<void*>(v.lo), v.hi - v.lo, MADV_DONTNEED) != 0) return;
  ++out.mappings;
  out.bytes += v.rss_kb * 1024;
}

}  // namespace

ReleasedPages release_startup_pages() {
  ReleasedPages out;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Vma cur;
  bool have = false;
  while (std::getline(smaps, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    const bool header = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (header && line.find('-') < line.find(' ')) {
      if (have) release(cur, out);
      cur = Vma{};
      have = true;
      std::istringstream in(line);
      std::string range, perms, offset, dev, inode, path;
      in >> range >> perms >> offset >> dev >> inode >> path;
      const size_t dash = range.find('-');
      cur.lo = std::strtoull(range.substr(0, dash).c_str(), nullptr, 16);
      cur.hi = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16);
      // Regular files only: a device's mapping may not come back from a page cache.
      cur.candidate = perms.size() == 4 && perms[1] == '-' && perms[3] == 'p' && inode != "0" &&
                      !path.empty() && path[0] == '/' && path.rfind("/dev/", 0) != 0;
      continue;
    }
    auto kb = [&line](const char* key, size_t& into) {
      const size_t n = std::char_traits<char>::length(key);
      if (line.compare(0, n, key) == 0) into = std::strtoull(line.c_str() + n, nullptr, 10);
    };
    kb("Rss:", cur.rss_kb);
    kb("Anonymous:", cur.anon_kb);
  }
  if (have) release(cur, out);
  ::malloc_trim(0);
  return out;
}

}  // namespace parley::server
