#include "store/postgres/pg_history.h"

#include <algorithm>
#include <cstdlib>

#include "store/blocking_check.h"
#include "store/postgres/libpq.h"
#include "store/postgres/pg_conn.h"

namespace parley::store::postgres {

PgHistory::PgHistory(std::string url, unsigned threads, uint32_t timeout_ms)
    : url_(std::move(url)), timeout_ms_(timeout_ms), pool_(threads) {}

PgHistory::~PgHistory() { pool_.wait_idle(); }

std::unique_ptr<PgConn> PgHistory::take() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return std::make_unique<PgConn>(url_, timeout_ms_);
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void PgHistory::give(std::unique_ptr<PgConn> c) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(c));
}

void PgHistory::read(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit, bool newest,
                     ReadDone done) {
  pool_.post([this, id, lo, hi, limit, newest, done = std::move(done)] {
    done(read_now(id, lo, hi, limit, newest));
  });
}

Result<std::vector<StoredMessage>> PgHistory::read_now(const ChannelId& id, uint64_t lo, uint64_t hi,
                                                       uint32_t limit, bool newest) {
  check_may_block();
  std::vector<StoredMessage> out;
  if (limit == 0 || lo >= hi) return out;
  auto conn = take();
  if (Status s = conn->ensure(); !s) return s.error();
  // Seqs stay below 2^63 (the hub's counters), so bigint holds them.
  const std::string sql = std::string("SELECT seq, ts_ms, sender, msg_id, body FROM ") + kTable +
                          " WHERE tenant = $1 AND channel = $2 AND seq >= $3 AND seq < $4 ORDER BY seq " +
                          (newest ? "DESC" : "ASC") + " LIMIT $5";
  auto r = conn->exec(sql, {id.tenant, id.channel, std::to_string(lo),
                            std::to_string(std::min<uint64_t>(hi, uint64_t{1} << 62)),
                            std::to_string(limit)});
  if (!r) {
    if (conn->connected()) give(std::move(conn));
    return r.error();
  }
  pg_result* res = r->get();
  const LibPq& pq = loaded_libpq();
  const int n = pq.ntuples(res);
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    StoredMessage m;
    m.seq = std::strtoull(pq.getvalue(res, i, 0), nullptr, 10);
    m.ts_ms = std::strtoll(pq.getvalue(res, i, 1), nullptr, 10);
    m.from.assign(pq.getvalue(res, i, 2), static_cast<size_t>(pq.getlength(res, i, 2)));
    m.id.assign(pq.getvalue(res, i, 3), static_cast<size_t>(pq.getlength(res, i, 3)));
    m.body.assign(pq.getvalue(res, i, 4), static_cast<size_t>(pq.getlength(res, i, 4)));
    out.push_back(std::move(m));
  }
  if (newest) std::reverse(out.begin(), out.end());
  give(std::move(conn));
  return out;
}

}  // namespace parley::store::postgres
