// Prometheus text of the persister's figures (docs/operations.md, "The persister").
#include <fmt/format.h>

#include "persist/persister.h"

namespace parley::persist {

namespace {
void family(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}
template <typename T>
void sample(std::string& out, const char* name, const char* type, const char* help, T v) {
  family(out, name, type, help);
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, v);
}
void histogram(std::string& out, const char* h, const char* help, const metrics::Histogram& hist) {
  std::array<uint64_t, metrics::Histogram::kBounds.size() + 1> buckets{};
  uint64_t count = 0;
  double sum = 0;
  hist.add_to(buckets, count, sum);
  family(out, h, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < metrics::Histogram::kBounds.size(); ++i) {
    cum += buckets[i];
    fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"{}\"}} {}\n", h, metrics::Histogram::kBounds[i], cum);
  }
  cum += buckets.back();
  fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", h, cum, h, sum,
                 h, count);
}
}  // namespace

std::string Persister::render_metrics() const {
  std::string out;
  const PersisterStats& s = stats_;
  const PersisterGauges g = gauges();
  auto c = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  sample(out, "parley_persist_rows_written_total", "counter",
         "Rows inserted into PostgreSQL (new to the table).", c(s.rows_written));
  sample(out, "parley_persist_duplicate_rows_total", "counter",
         "Rows PostgreSQL already held (a batch written again after a crash or retry).", c(s.duplicates));
  sample(out, "parley_persist_batches_total", "counter", "Batches every configured sink stored (one round's rows).", c(s.batches));
  sample(out, "parley_persist_acked_total", "counter", "WAL entries acknowledged (XACK) after COMMIT.",
         c(s.acked));
  sample(out, "parley_persist_reclaimed_total", "counter",
         "WAL entries taken over from another consumer (XAUTOCLAIM).", c(s.reclaimed));
  sample(out, "parley_persist_unusable_entries_total", "counter",
         "WAL entries acknowledged without a row (deleted by the stream cap, or malformed).", c(s.unusable));
  sample(out, "parley_persist_trimmed_total", "counter",
         "WAL entries trimmed below what every consumer group acknowledged.", c(s.trimmed));
  sample(out, "parley_persist_postgres_errors_total", "counter", "Failed PostgreSQL writes (each retried).",
         c(s.postgres_errors));
  sample(out, "parley_persist_valkey_errors_total", "counter", "Failed Valkey pipelines or commands.",
         c(s.valkey_errors));
  sample(out, "parley_persist_lag_entries", "gauge",
         "WAL entries not yet acknowledged by this group (pending plus undelivered).", g.lag_entries);
  sample(out, "parley_persist_pending_entries", "gauge",
         "WAL entries delivered to a consumer of this group and not acknowledged.", g.pending);
  sample(out, "parley_persist_lag_seconds", "gauge", "Age of the oldest unacknowledged WAL entry.",
         static_cast<double>(g.lag_ms) / 1000.0);
  sample(out, "parley_persist_lost_streams", "gauge",
         "WAL streams whose hard cap dropped entries this group never read.", g.lost_streams);
  sample(out, "parley_persist_streams", "gauge", "WAL streams this process drains.", stream_count_);
  sample(out, "parley_persist_postgres_up", "gauge", "1 when the last PostgreSQL write succeeded.",
         s.postgres_up.load() ? 1 : 0);
  sample(out, "parley_persist_valkey_up", "gauge", "1 when the last Valkey pipeline succeeded.",
         s.valkey_up.load() ? 1 : 0);
  histogram(out, "parley_persist_write_seconds", "One PostgreSQL write transaction, BEGIN to COMMIT.",
            s.write_seconds);
  sample(out, "parley_persist_dynamodb_items_written_total", "counter",
         "Items DynamoDB stored (BatchWriteItem puts it processed; a replayed entry rewrites its item).",
         c(s.dynamo_items_written));
  sample(out, "parley_persist_dynamodb_requests_total", "counter", "BatchWriteItem calls DynamoDB answered 200.",
         c(s.dynamo_requests));
  sample(out, "parley_persist_dynamodb_unprocessed_total", "counter",
         "Items DynamoDB returned as UnprocessedItems (sent again).", c(s.dynamo_unprocessed));
  sample(out, "parley_persist_dynamodb_retries_total", "counter",
         "Backoff waits (exponential, jittered) before sending what DynamoDB had not stored.", c(s.dynamo_retries));
  sample(out, "parley_persist_dynamodb_throttles_total", "counter",
         "BatchWriteItem calls refused for capacity (ProvisionedThroughputExceeded, Throttling).",
         c(s.dynamo_throttles));
  sample(out, "parley_persist_dynamodb_errors_total", "counter",
         "Other failed DynamoDB calls (each retried; none drops an entry).", c(s.dynamo_errors));
  sample(out, "parley_persist_dynamodb_up", "gauge", "1 when the last DynamoDB call succeeded.",
         s.dynamo_up.load() ? 1 : 0);
  histogram(out, "parley_persist_dynamodb_write_seconds", "One BatchWriteItem call (up to 25 items).",
            s.dynamo_write_seconds);
  return out;
}

}  // namespace parley::persist
