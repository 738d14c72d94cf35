// The persister's maintenance of one partition WAL stream, one Lua script run
// every trim_interval_ms: it trims the stream below what every consumer group
// has acknowledged, and reports this group's lag.
//
// The trim point, per group: the oldest entry it still has pending (delivered,
// not acknowledged: XPENDING's summary), or when none, its last delivered id
// (everything up to it is acknowledged). The stream is cut (XTRIM MINID, exact)
// below the lowest of them, so no group ever loses an entry it has not
// acknowledged. A stream without any group is left alone (the append script's
// cap bounds it). Reading the groups and trimming happen in one script, so no
// read or acknowledgement interleaves.
//
// Pure data; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

struct redisReply;

namespace parley::persist {

// KEYS[1]: the stream. ARGV[1]: this persister's group.
// Reply: {pending, undelivered (-1: unknown), oldest unacknowledged entry's age
// in ms (0: none), entries trimmed now, entries deleted before this group read
// them (the append script's hard cap went over unpersisted entries; 0 or 1)}.
const std::string& wal_trim_script();

struct WalLag {
  int64_t pending = 0;
  int64_t undelivered = 0;
  int64_t oldest_ms = 0;
  int64_t trimmed = 0;
  bool lost = false;
};
Result<WalLag> parse_wal_lag(const redisReply* r);

}  // namespace parley::persist
