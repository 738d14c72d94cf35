// The WAL persister: drains every partition WAL stream of the valkey store into
// PostgreSQL (docs/architecture.md, "The WAL persister"; docs/operations.md,
// "The persister").
//
// Per stream ({<tenant>.p<k>}:w, one per tenant and partition) one consumer
// group (XGROUP CREATE ... MKSTREAM, on first sight) shared by every persister
// process; each process is one consumer. A worker reads its streams with
// XREADGROUP (at most `batch` entries per stream and round), writes what it read
// to PostgreSQL in one transaction (archive_writer.h: idempotent on tenant,
// channel, seq), and only after COMMIT acknowledges the entries (XACK). So an
// entry leaves the group's pending list only once its row is committed; a crash
// anywhere before leaves it pending, and a crash between COMMIT and XACK makes
// the next writer insert a row that is already there (a counted duplicate,
// nothing written twice).
//
// The sinks: PostgreSQL (archive_writer.h), DynamoDB (dynamo_writer.h), or
// both; an entry is acknowledged only once every configured sink has it.
//
// Recovery: a (re)started consumer first re-reads its own pending entries
// (XREADGROUP ... 0); every claim interval each worker takes over entries that
// another consumer has left pending for longer than claim_idle_ms (XAUTOCLAIM):
// a persister killed mid-batch is finished by the others. PostgreSQL down: the
// worker keeps its batch and retries it (backoff up to 2 s) without reading
// more; nothing is acknowledged meanwhile. Valkey down: the pipeline fails, the
// worker reconnects and re-reads its pending entries.
//
// Trimming (wal_trim.h): every trim_interval_ms each stream is cut below the
// lowest entry any group still needs, and this group's lag is measured.
//
// Routing: standalone or several independent nodes, partition k lives on
// nodes[k % N] (as the store maps it); a cluster is discovered with CLUSTER
// SLOTS at start and a MOVED reply re-points that stream at the named master.
//
// Threads: `threads` workers, stream i on worker i % threads. Everything here is
// blocking (hiredis sync API, libpq) on the persister's own threads: it is not
// an event loop and serves no client, so waiting on a round trip costs nothing
// but that worker's time. start()/stop() from one controlling thread; the
// metrics are atomics, read from any thread (the /metrics endpoint).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "metrics/metrics.h"
#include "store/dynamodb/dynamo_client.h"

namespace parley::persist {

struct PersisterOptions {
  std::vector<std::string> nodes;  // host:port; seeds when cluster
  bool cluster = false;
  uint32_t partitions = 64;
  std::vector<std::string> tenants;
  std::string postgres_url;        // empty: no PostgreSQL sink
  // The DynamoDB sink (dynamo_writer.h), resolved (env filled in); unset: none.
  // With both sinks an entry is acknowledged once both have it.
  std::optional<store::dynamodb::DynamoOptions> dynamodb;
  std::string group = "parley-persister";
  std::string consumer;            // this process's name in every group
  uint32_t batch = 500;            // entries per stream and round
  uint32_t threads = 1;
  uint32_t poll_ms = 50;           // idle wait between rounds that read nothing
  uint32_t claim_idle_ms = 30'000; // another consumer's entry pending this long is taken over
  uint32_t trim_interval_ms = 1000;
  uint32_t valkey_timeout_ms = 2000;
  uint32_t postgres_timeout_ms = 10'000;
};

// Totals since start.
struct PersisterStats {
  std::atomic<uint64_t> rows_written{0};    // rows inserted into PostgreSQL
  std::atomic<uint64_t> duplicates{0};      // rows PostgreSQL already had
  std::atomic<uint64_t> batches{0};         // committed transactions
  std::atomic<uint64_t> acked{0};           // entries acknowledged
  std::atomic<uint64_t> reclaimed{0};       // entries taken over with XAUTOCLAIM
  std::atomic<uint64_t> unusable{0};        // entries acknowledged without a row
  std::atomic<uint64_t> trimmed{0};         // entries cut from the streams
  std::atomic<uint64_t> postgres_errors{0};
  std::atomic<uint64_t> valkey_errors{0};
  std::atomic<bool> postgres_up{true};
  std::atomic<bool> valkey_up{true};
  metrics::Histogram write_seconds;         // one transaction, BEGIN to COMMIT
  // The DynamoDB sink (dynamo_writer.h).
  std::atomic<uint64_t> dynamo_items_written{0};  // puts DynamoDB processed
  std::atomic<uint64_t> dynamo_requests{0};       // BatchWriteItem calls answered 200
  std::atomic<uint64_t> dynamo_unprocessed{0};    // items it answered as UnprocessedItems (sent again)
  std::atomic<uint64_t> dynamo_retries{0};        // backoff waits before sending what was left
  std::atomic<uint64_t> dynamo_throttles{0};      // requests refused for capacity
  std::atomic<uint64_t> dynamo_errors{0};         // other failed requests (each retried)
  std::atomic<bool> dynamo_up{true};
  metrics::Histogram dynamo_write_seconds;        // one BatchWriteItem call
};

// The last maintenance pass's figures, over every stream.
struct PersisterGauges {
  int64_t lag_entries = 0;   // pending + not yet delivered to the group
  int64_t pending = 0;       // delivered, not acknowledged
  int64_t lag_ms = 0;        // age of the oldest unacknowledged entry (the max)
  int64_t lost_streams = 0;  // streams whose cap dropped entries the group never read
};

class Persister {
 public:
  explicit Persister(PersisterOptions opts);
  ~Persister();  // stop()

  // Checks the options and discovers a cluster (blocking); starts the workers.
  Status start();
  // Finishes each worker's current step (a batch in flight is written and
  // acknowledged, or left pending) and joins them.
  void stop();

  const PersisterStats& stats() const { return stats_; }
  PersisterGauges gauges() const;
  // Prometheus text of stats().
  std::string render_metrics() const;
  size_t streams() const { return stream_count_; }

 private:
  class Worker;
  friend class Worker;
  // Sleeps up to ms or until stop(); false once stopping.
  bool wait(uint32_t ms);

  PersisterOptions opts_;
  PersisterStats stats_;
  size_t stream_count_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::atomic<bool> stop_flag_{false};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
};

}  // namespace parley::persist
