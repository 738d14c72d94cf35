// StoreStateFile: what the embedded store keeps OUTSIDE RocksDB, in one small text file
// (PARLEY-STATE in the store directory, a name RocksDB ignores), so that damage to
// RocksDB's own files cannot take it along:
//   epoch        bumped by each start that accepted data loss; clients see it in `joined`
//   seq_ceiling  no channel's seq has ever exceeded it: raised (fsynced) in steps of
//                kSeqLease BEFORE a batch holding a higher seq is written, so it bounds
//                every seq that may have been acknowledged, whatever RocksDB loses
//   loss_floor   the ceiling at the last accepted loss: channels continue above it
//   clean        the last stop closed the database cleanly (its WAL holds nothing
//                that was not also flushed), so recovery may demand a perfect WAL
//   boot         the machine's boot id at the last open: an unclean stop with
//                another boot id since was a machine stop (a power loss), which
//                with fsync = never may have lost acknowledged writes (issue 26)
//   damaged      one line per channel ("tenant/channel") whose WAL records after a
//                damaged one were dropped at a start: unavailable until a start
//                with accept_data_loss (then epoch + 1, as any accepted loss)
//
// Threading: load() and save() run while the store opens or closes, reserve() on the
// group committer's writer thread only; nothing else touches it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>


#include "common/status.h"

namespace parley::store {

// The running machine's boot id (/proc/sys/kernel/random/boot_id, or the file
// PARLEY_BOOT_ID_PATH names: the power-loss tests' file system), "" if unreadable.
std::string current_boot_id();

struct StoreStateData {
  uint32_t epoch = 1;
  uint64_t seq_ceiling = 0;
  uint64_t loss_floor = 0;
  bool clean = false;
  std::string boot;  // "" when unknown (a file written before the key existed)
  std::vector<std::string> damaged;  // "tenant/channel", at most kMaxDamagedChannels
};

class StoreStateFile {
 public:
  // A raise of the ceiling costs one small write + fsync + rename; 65,536 seqs of
  // the busiest channel apart, so a few per minute at most, never per message.
  static constexpr uint64_t kSeqLease = uint64_t{1} << 16;
  static constexpr const char* kFileName = "PARLEY-STATE";
  // More channels than this behind a damaged WAL record: the start refuses, as
  // without the list (the file stays small; such damage wants a restore).
  static constexpr size_t kMaxDamagedChannels = 10000;

  explicit StoreStateFile(std::string dir) : dir_(std::move(dir)) {}

  // Reads the file; a missing one is a fresh state (a new store, or one written
  // before this file existed). Error when it exists and cannot be parsed.
  Status load();
  // Replaces the file atomically (temp file, fsync, rename, fsync of the folder).
  Status save();
  // Before writing any seq up to `seq`: raises the ceiling on disk when needed.
  Status reserve(uint64_t seq);

  StoreStateData& data() { return data_; }
  const StoreStateData& data() const { return data_; }
  std::string path() const { return dir_ + "/" + kFileName; }

 private:
  std::string dir_;
  StoreStateData data_;
};

}  // namespace parley::store
