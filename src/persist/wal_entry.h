// The entries of a partition's WAL stream as the persister reads them
// (XREADGROUP, XAUTOCLAIM replies), and the archive rows they become.
//
// The append script writes each entry with fields c (channel), s (seq), f
// (sender), i (message id), t (ts_ms), b (body). A reply comes from outside the
// process: one with another shape is an error value, and an entry whose fields
// are missing, not numbers, or not text PostgreSQL can store (a NUL byte,
// invalid UTF-8) is returned as unusable (so it is acknowledged and counted,
// never retried forever), never an assertion.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/archive_row.h"

struct redisReply;

namespace parley::persist {

using store::ArchiveRow;

struct WalEntry {
  std::string id;                  // the stream entry id, "<ms>-<n>"
  std::optional<ArchiveRow> row;   // empty: deleted from the stream, or unusable
  bool deleted = false;            // trimmed before it was read (a pending read shows it)
};

// Entries of the one stream in an XREADGROUP reply (nil: none).
Result<std::vector<WalEntry>> parse_read(const redisReply* r, const std::string& tenant);
// XAUTOCLAIM's {next cursor, entries, deleted ids}.
struct Claimed {
  std::string cursor;
  std::vector<WalEntry> entries;
};
Result<Claimed> parse_claim(const redisReply* r, const std::string& tenant);

// Whether `s` is valid UTF-8 without NUL bytes (what a PostgreSQL text column takes).
bool storable_text(const std::string& s);

}  // namespace parley::persist
