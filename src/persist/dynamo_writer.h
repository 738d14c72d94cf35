// Writes archive rows to DynamoDB (store/dynamodb/dynamo_client.h): the
// persister's [dynamodb] sink, beside or instead of PostgreSQL's.
//
// A batch goes out as BatchWriteItem requests of at most 25 puts. What DynamoDB
// leaves unprocessed, and whole requests it refuses for capacity
// (ProvisionedThroughputExceededException, ThrottlingException) or that fail on
// the way, stay in the batch and go again after an exponential backoff with full
// jitter (a random wait up to 50 ms x 2^attempt, at most 5 s): nothing is dropped,
// and the worker, which reads no more WAL until the batch is written, slows to
// what the table takes. Throttling also leaves a pause before each later
// request (doubling per throttle up to 1 s, halving per request that went through
// whole), so a persister at a table's limit keeps below it instead of bouncing
// off it. A put of a key that exists overwrites the item with the same values:
// a WAL entry written twice (retry, reclaimed after a crash) is one item.
//
// Thread: one persister worker owns it; blocking.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "persist/wal_entry.h"
#include "store/dynamodb/dynamo_client.h"

namespace parley::persist {

struct PersisterStats;

class DynamoWriter {
 public:
  // wait(ms): sleeps, false once the persister stops.
  DynamoWriter(store::dynamodb::DynamoOptions resolved, PersisterStats& stats,
               std::function<bool(uint32_t)> wait);

  // Every row written (true), or the persister stopping first (false).
  // between(): called before each retry wait (the worker's stream upkeep).
  bool write(const std::vector<const ArchiveRow*>& rows, const std::function<void()>& between);

 private:
  // One pass over `left`: what is still unwritten stays in it. True when a
  // request was throttled.
  bool pass(std::vector<const ArchiveRow*>& left);
  uint32_t backoff_ms(uint32_t attempt);

  store::dynamodb::DynamoClient client_;
  PersisterStats& stats_;
  std::function<bool(uint32_t)> wait_;
  bool table_ready_ = false;
  uint32_t pace_ms_ = 0;  // pause before each request after throttling
  int64_t last_log_ms_ = 0;
  std::minstd_rand rng_;
};

}  // namespace parley::persist
