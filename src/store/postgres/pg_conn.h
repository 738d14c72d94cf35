// One libpq connection used synchronously with a deadline on every call, and the
// archive table the persister writes and the valkey store reads history from.
//
// libpq's own PQexec waits for as long as the server takes; a paused or
// half-dead database would hold the calling thread forever. Here a query is sent
// with PQsendQueryParams and its result awaited with poll() until the deadline;
// past it the connection is dropped (kUnavailable) and the next call connects
// again. Connecting is bounded by libpq's connect_timeout.
//
// Thread: blocking; one thread at a time per PgConn, never an event loop (the
// persister's threads, the store's PostgreSQL reader threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

struct pg_conn;
struct pg_result;

namespace parley::store::postgres {

// The table every tenant's archived messages go to; one row per (tenant,
// channel, seq), body as the exact JSON text that was published.
inline constexpr const char* kTable = "parley_messages";
// Idempotent: run by every persister and reader on connect.
std::string schema_sql();

struct ResultFree {
  void operator()(pg_result* r) const;
};
using PgResult = std::unique_ptr<pg_result, ResultFree>;

class PgConn {
 public:
  // url: a libpq connection URI or key=value string. timeout_ms bounds each
  // connect (rounded up to whole seconds, at least 2, libpq's rule) and each exec.
  PgConn(std::string url, uint32_t timeout_ms);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Connects when not connected and makes sure the schema exists.
  Status ensure();
  // One statement with text parameters (none may contain a NUL byte). The
  // result when it succeeded (PGRES_COMMAND_OK or PGRES_TUPLES_OK); an error
  // otherwise: kUnavailable when the connection failed or timed out (it is
  // then closed), kInternal for an SQL error (its SQLSTATE first in msg).
  Result<PgResult> exec(const std::string& sql, const std::vector<std::string>& params = {});
  void close();
  bool connected() const { return conn_ != nullptr; }

 private:
  Result<PgResult> wait_result();

  std::string url_;
  uint32_t timeout_ms_;
  pg_conn* conn_ = nullptr;
};

}  // namespace parley::store::postgres
