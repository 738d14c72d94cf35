// Checks of the embedded store's files against their own checksums (issue 26):
// the table files (RocksDB's block checksums) and the write-ahead logs (each
// record's CRC), naming the channels a damaged spot holds.
//
// Used by the store at start (check_tables within a byte budget, newest files
// first, on a reader thread) and by `parley verify-data DIR` offline (everything).
// Blocking; any thread; reads files only, never writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocksdb {
struct LiveFileMetaData;
struct Options;
}

namespace parley::store {

struct DamagedFile {
  std::string file;   // the file's name in the store directory (e.g. 000012.sst)
  std::string what;   // RocksDB's words, or the WAL reader's
  // "tenant/channel" for each channel whose records lie in or next to the
  // damaged spot (a table's damaged block: the channels whose keys around it
  // fail to read; a WAL record: the channels it and every later record of
  // the file write, which a point-in-time recovery would drop). Empty when
  // the damage leaves no key readable.
  std::vector<std::string> channels;
};

struct CheckResult {
  std::vector<DamagedFile> damaged;
  uint64_t files_checked = 0;
  uint64_t bytes_checked = 0;
  uint64_t files_skipped = 0;  // past the budget
  // A WAL whose last record is cut short: what a crash leaves (the record was
  // being written, so never acknowledged), not damage. Names of such files.
  std::vector<std::string> torn_tails;
};

// The table files of `dir`, newest first, while the bytes checked stay within
// `budget_bytes` (UINT64_MAX: all). `options` as the store opens the database
// (its table format and compression). With `live` (file names, e.g.
// "000012.sst"), only those: a table a flush or compaction is still writing, or
// one a power loss cut short before the database took it in, is in the folder
// but no part of the data (issue 26: such 0-byte files were reported damaged).
CheckResult check_tables(const std::string& dir, const rocksdb::Options& options,
                         uint64_t budget_bytes, const std::vector<std::string>* live = nullptr);
// The table files the database of `dir` (not open elsewhere for writing, or
// open: a read-only look) holds, by name; nullopt when it cannot be opened
// even read-only (then every table in the folder is checked).
std::optional<std::vector<std::string>> live_tables(const std::string& dir);
// Names ("000012.sst") of a database's live files as RocksDB lists them.
std::vector<std::string> table_names(const std::vector<rocksdb::LiveFileMetaData>& files);
// Every WAL (*.log) of `dir`, record by record.
CheckResult check_wals(const std::string& dir);

// What a point-in-time recovery of `dir` drops: everything from the first
// damaged WAL record (oldest file first) to the end of the newest WAL.
struct WalLoss {
  bool found = false;               // false: no damaged WAL record
  std::string file, what;           // the first damaged record's file and RocksDB-like words
  std::vector<std::string> files;   // that file and every later WAL
  std::vector<std::string> channels;  // "tenant/channel" written from the damage on
};
WalLoss wal_loss(const std::string& dir);

// "tenant/channel" of a message or dedupe record's key, "" for other keys.
std::string channel_of_key(std::string_view key);

}  // namespace parley::store
