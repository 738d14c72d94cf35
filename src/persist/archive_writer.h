// Writes archive rows to PostgreSQL: one transaction per batch, multi-row
// INSERT ... ON CONFLICT DO NOTHING on the (tenant, channel, seq) key, so a
// batch written twice (a retry after a lost COMMIT reply, entries reclaimed from
// a persister that died between COMMIT and XACK) leaves each row exactly once.
//
// Thread: blocking (store/postgres/pg_conn.h bounds every call); one persister
// worker thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "persist/wal_entry.h"
#include "store/postgres/pg_conn.h"

namespace parley::persist {

struct WriteCount {
  uint64_t inserted = 0;    // rows new to the table
  uint64_t duplicates = 0;  // rows it had already (conflicts)
};

class ArchiveWriter {
 public:
  ArchiveWriter(std::string url, uint32_t timeout_ms) : conn_(std::move(url), timeout_ms) {}

  // All rows committed, or none (an error; the caller retries the same rows).
  Result<WriteCount> write(const std::vector<const ArchiveRow*>& rows);

 private:
  store::postgres::PgConn conn_;
};

}  // namespace parley::persist
