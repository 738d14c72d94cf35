#include "server/verify_data_command.h"

#include <cstdint>
#include <filesystem>
#include <iostream>

#include <rocksdb/options.h>

#include "server/cli.h"
#include "store/data_check.h"
#include "store/store_state.h"

namespace parley::server {
namespace {

void print_damage(const store::DamagedFile& d) {
  std::cout << "damaged " << d.file << ": " << d.what << "\n  channels: ";
  if (d.channels.empty()) std::cout << "(none readable at the damage)";
  for (size_t i = 0; i < d.channels.size(); ++i) std::cout << (i ? ", " : "") << d.channels[i];
  std::cout << "\n";
}

}  // namespace

int run_verify_data(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].rfind("--", 0) == 0) {
    std::cerr << "usage: parley verify-data DIR   (the server's data_dir, or its store/ folder)\n";
    return kExitUsage;
  }
  namespace fs = std::filesystem;
  std::string dir = args[0];
  if (fs::exists(fs::path(dir) / "store" / "CURRENT")) dir = (fs::path(dir) / "store").string();
  if (!fs::exists(fs::path(dir) / "CURRENT")) {
    std::cerr << "parley: " << args[0] << " holds no embedded store (no CURRENT file)\n";
    return kExitUsage;
  }
  // Tables are self-describing (format, compression, checksum type): RocksDB's
  // default options read the store's.
  const rocksdb::Options options;
  // Only the tables the database holds: an interrupted flush or compaction leaves
  // files it never took in (RocksDB deletes them at its next open).
  const auto live = store::live_tables(dir);
  const store::CheckResult tables =
      store::check_tables(dir, options, UINT64_MAX, live ? &*live : nullptr);
  const store::CheckResult wals = store::check_wals(dir);
  for (const auto& d : tables.damaged) print_damage(d);
  for (const auto& d : wals.damaged) print_damage(d);
  for (const auto& f : wals.torn_tails) {
    std::cout << "torn tail " << f << ": its last record was cut short, as a crash leaves it "
                 "(never acknowledged); the next start drops it\n";
  }
  // Channels an earlier start made unavailable (it dropped their WAL records
  // after a damaged one; the dropped files are in damaged-wal-*/).
  store::StoreStateFile state(dir);
  const bool listed = state.load() && !state.data().damaged.empty();
  if (listed) {
    std::cout << "unavailable: " << state.data().damaged.size()
              << " channels whose WAL records after a damaged one were dropped at a start "
                 "(PARLEY-STATE)\n  channels: ";
    for (size_t i = 0; i < state.data().damaged.size(); ++i) {
      std::cout << (i ? ", " : "") << state.data().damaged[i];
    }
    std::cout << "\n";
  }
  const size_t damaged = tables.damaged.size() + wals.damaged.size() + (listed ? 1 : 0);
  std::cout << dir << ": " << tables.files_checked << " table files ("
            << tables.bytes_checked / 1024 << " KiB) and " << wals.files_checked << " WAL files ("
            << wals.bytes_checked / 1024 << " KiB) checked, " << damaged << " damaged\n";
  if (damaged == 0) return kExitOk;
  std::cout << "To recover (docs/operations.md \"Damaged data\"): restore the data dir from a "
               "backup, or start once with `accept_data_loss = true` (or --accept-data-loss) to "
               "keep what is readable: the store's epoch goes up and every channel's seq "
               "continues above any seq that may have been acknowledged.\n";
  return kExitFailed;
}

}  // namespace parley::server
