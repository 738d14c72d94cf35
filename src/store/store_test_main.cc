// store_test's main. Besides running the tests it doubles as the child process of
// the multi-process tests (embedded_store_test.cc): a test forks and execs this
// binary with a child flag, so the child starts with a clean RocksDB (forking a
// process whose RocksDB threads are running leaves their state behind in the child).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <semaphore>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/store.h"
#include "store/store_test_util.h"

namespace parley::store::testing {
namespace {

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Appends to kCrashChannels channels, continuing where the store left off, with up to
// 256 appends in flight; each done() writes an AckRecord to `fd` before the slot is
// released. Runs until killed (or a large count is done).
int run_crash_child(const std::string& dir, int fd, int64_t base_ts) {
  auto opened = open_embedded_store(EmbeddedOptions{dir, FsyncMode::kNever, 4096});
  if (!opened) return 2;
  Store& store = **opened;
  std::vector<uint64_t> next(kCrashChannels);
  for (int c = 0; c < kCrashChannels; ++c) {
    auto rec = recover_sync(store, crash_channel(c), 0);
    if (!rec) return 2;
    next[c] = rec->last_seq + 1;
  }
  std::counting_semaphore<256> window(256);
  for (int i = 0; i < 2'000'000; ++i) {
    int c = i % kCrashChannels;
    uint64_t seq = next[c]++;
    window.acquire();
    store.append(AppendRequest{crash_channel(c), crash_message(c, seq, base_ts),
                               kCrashHistoryLimit, kCrashDedupeWindowS},
                 [fd, c, seq, &window](AppendOutcome outcome) {
                           const Status st = outcome.status();
                   AckRecord r{static_cast<uint32_t>(c), 0, seq};
                   if (!st || !write_all(fd, &r, sizeof r)) _exit(3);
                   window.release();
                 });
  }
  store.flush();
  return 0;
}

// Opens the store, says so with one byte on `fd`, then holds it until killed.
int run_hold_child(const std::string& dir, int fd) {
  auto opened = open_embedded_store(EmbeddedOptions{dir});
  if (!opened) return 2;
  char ready = 'r';
  if (!write_all(fd, &ready, 1)) return 3;
  for (;;) pause();
}

}  // namespace
}  // namespace parley::store::testing

int main(int argc, char** argv) {
  using namespace parley::store::testing;
  if (argc == 5 && std::strcmp(argv[1], kCrashChildFlag) == 0) {
    return run_crash_child(argv[2], std::atoi(argv[3]), std::atoll(argv[4]));
  }
  if (argc == 4 && std::strcmp(argv[1], kHoldChildFlag) == 0) {
    return run_hold_child(argv[2], std::atoi(argv[3]));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
