#include "store/postgres/pg_conn.h"

#include <poll.h>

#include <algorithm>
#include <chrono>

#include "store/postgres/libpq.h"

namespace parley::store::postgres {

namespace {
Error unavailable(std::string msg) { return Error{ErrorCode::kUnavailable, std::move(msg), 1000}; }

std::string trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

std::string schema_sql() {
  return std::string("CREATE TABLE IF NOT EXISTS ") + kTable +
         " (tenant text NOT NULL, channel text NOT NULL, seq bigint NOT NULL,"
         " ts_ms bigint NOT NULL, sender text NOT NULL, msg_id text NOT NULL, body text NOT NULL,"
         " PRIMARY KEY (tenant, channel, seq))";
}

void ResultFree::operator()(pg_result* r) const { loaded_libpq().clear(r); }

PgConn::PgConn(std::string url, uint32_t timeout_ms) : url_(std::move(url)), timeout_ms_(timeout_ms) {}

PgConn::~PgConn() { close(); }

void PgConn::close() {
  if (conn_) loaded_libpq().finish(conn_);
  conn_ = nullptr;
}

Status PgConn::ensure() {
  if (conn_) return Status::ok();
  auto lib = libpq();
  if (!lib) return lib.error();
  const LibPq& pq = **lib;
  const std::string timeout = std::to_string(std::max<uint32_t>(2, (timeout_ms_ + 999) / 1000));
  // The URL's own settings stand, except connect_timeout (a later keyword wins).
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* values[] = {url_.c_str(), timeout.c_str(), "parley", nullptr};
  conn_ = pq.connectdb_params(keys, values, 1);
  if (pq.status(conn_) != CONNECTION_OK) {
    std::string why = trimmed(pq.error_message(conn_));
    close();
    return unavailable("postgres: cannot connect: " + why);
  }
  // NOTICEs ("relation already exists, skipping") are not the log's business.
  pq.set_notice_processor(conn_, [](void*, const char*) {}, nullptr);
  // A race between two processes creating the table at once ends in a unique
  // violation on the catalog for one of them: it tries again once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto r = exec(schema_sql());
    if (r) return Status::ok();
    if (!conn_ || attempt == 1) return r.error();
  }
  return Status::ok();
}

Result<PgResult> PgConn::exec(const std::string& sql, const std::vector<std::string>& params) {
  if (!conn_) return unavailable("postgres: not connected");
  const LibPq& pq = loaded_libpq();
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  if (!pq.send_query_params(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, 0)) {
    std::string why = trimmed(pq.error_message(conn_));
    close();
    return unavailable("postgres: send failed: " + why);
  }
  return wait_result();
}

// Reads every result of the statement (libpq wants them drained); the last
// error wins, else the last result.
Result<PgResult> PgConn::wait_result() {
  const LibPq& pq = loaded_libpq();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  PgResult last;
  std::string error;
  for (;;) {
    while (pq.is_busy(conn_)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        close();
        return unavailable("postgres: no answer within " + std::to_string(timeout_ms_) + " ms");
      }
      pollfd p{pq.socket(conn_), POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left));
      if (n < 0 && errno != EINTR) {
        close();
        return unavailable("postgres: poll failed");
      }
      if (n > 0 && !pq.consume_input(conn_)) {
        std::string why = trimmed(pq.error_message(conn_));
        close();
        return unavailable("postgres: connection lost: " + why);
      }
    }
    PGresult* r = pq.get_result(conn_);
    if (r == nullptr) break;
    const ExecStatusType st = pq.result_status(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && error.empty()) {
      const char* state = pq.result_error_field(r, PG_DIAG_SQLSTATE);
      error = std::string(state ? state : "?????") + " " + trimmed(pq.result_error_message(r));
    }
    last.reset(r);
  }
  if (pq.status(conn_) != CONNECTION_OK) {
    std::string why = trimmed(pq.error_message(conn_));
    close();
    return unavailable("postgres: connection lost: " + (error.empty() ? why : error));
  }
  if (!error.empty()) {
    // Class 08 (connection exception) and 57P (operator intervention: shutdown,
    // crash recovery) are the database going away, not the statement.
    if (error.rfind("08", 0) == 0 || error.rfind("57P", 0) == 0) {
      close();
      return unavailable("postgres: " + error);
    }
    return Error{ErrorCode::kInternal, "postgres: " + error};
  }
  if (!last) return Error{ErrorCode::kInternal, "postgres: no result"};
  return last;
}

}  // namespace parley::store::postgres
