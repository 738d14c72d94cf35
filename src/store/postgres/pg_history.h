// The history PostgreSQL keeps once Valkey has trimmed it: the valkey store asks
// here for the part of a read its recent-history stream no longer covers.
//
// Threads: read() from any thread (a loop's completion asks); the query runs on
// this object's own reader threads (store/reader_pool.h), each holding a PgConn
// from a small pool, so no event loop ever waits on PostgreSQL. `done` runs on
// a reader thread. The queue is bounded by what the hub asks (one history
// request in flight per connection, backfill pages per join).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/archive_reader.h"
#include "store/reader_pool.h"
#include "store/store.h"

namespace parley::store::postgres {

class PgConn;

class PgHistory final : public ArchiveReader {
 public:
  PgHistory(std::string url, unsigned threads, uint32_t timeout_ms);
  // Runs the reads already asked for, then closes the connections.
  ~PgHistory() override;

  // The archived messages of `id` with lo <= seq < hi, oldest first: the `limit`
  // oldest of them, or the `limit` newest when `newest`. kUnavailable when
  // PostgreSQL cannot answer.
  void read(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit, bool newest,
            ReadDone done) override;
  // The same, on the calling thread (blocking; never on a loop).
  Result<std::vector<StoredMessage>> read_now(const ChannelId& id, uint64_t lo, uint64_t hi,
                                              uint32_t limit, bool newest);

 private:
  std::unique_ptr<PgConn> take();
  void give(std::unique_ptr<PgConn> c);

  std::string url_;
  uint32_t timeout_ms_;
  std::mutex mu_;
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
  ReaderPool pool_;  // last: its threads stop first, while the connections still exist
};

}  // namespace parley::store::postgres
