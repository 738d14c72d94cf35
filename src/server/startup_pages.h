// Gives back, once the server is up, the memory its start-up used and will not
// use again (issue 12's idle RSS):
// - code and read-only data pages mapped while starting (RocksDB's registries and
//   open, configuration parsing, library constructors): the kernel maps the 64 KiB
//   around every page a fault touches, so start-up left nearly all of the binary's
//   text and much of each library's mapped. The clean, never-written pages of
//   read-only private file mappings are unmapped with MADV_DONTNEED; they stay in
//   the page cache, and code that runs again faults them back in (a minor fault,
//   no disk read). Pages a mapping holds privately (relocations: any Anonymous
//   page) are never touched: such a mapping is skipped whole.
// - the heap's free pages (malloc_trim).
//
// Thread: the main thread, after start-up; other threads may run meanwhile (the
// pages it drops are read-only, so another thread at most faults one back).
#pragma once

#include <cstddef>

namespace parley::server {

struct ReleasedPages {
  size_t mappings = 0;  // file mappings given back
  size_t bytes = 0;     // their resident bytes before
};

ReleasedPages release_startup_pages();

}  // namespace parley::server
