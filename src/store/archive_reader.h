// Where the valkey store reads history its streams no longer keep: the
// persister's archive, PostgreSQL (postgres/pg_history.h) or DynamoDB
// (dynamodb/dynamo_history.h).
//
// Threads: read() from any thread; the read runs on the reader's own threads,
// never on an event loop, and `done` runs there.
#pragma once

#include <cstdint>

#include "store/store.h"

namespace parley::store {

class ArchiveReader {
 public:
  virtual ~ArchiveReader() = default;
  // The archived messages of `id` with lo <= seq < hi, oldest first: the `limit`
  // oldest of them, or the `limit` newest when `newest`. kUnavailable when the
  // archive cannot answer.
  virtual void read(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit, bool newest,
                    ReadDone done) = 0;
};

}  // namespace parley::store
