// The history DynamoDB keeps once Valkey has trimmed it (without [postgres]):
// Query by partition key and seq range, consistent reads, on this object's own
// reader threads (store/reader_pool.h), each taking a DynamoClient (one kept-
// alive connection) from a small pool, so no event loop waits on DynamoDB.
//
// Threads: read() from any thread; `done` runs on a reader thread.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "store/archive_reader.h"
#include "store/dynamodb/dynamo_client.h"
#include "store/reader_pool.h"

namespace parley::store::dynamodb {

class DynamoHistory final : public ArchiveReader {
 public:
  DynamoHistory(DynamoOptions resolved, unsigned threads);
  ~DynamoHistory() override;  // runs the reads already asked for

  void read(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit, bool newest,
            ReadDone done) override;

 private:
  std::unique_ptr<DynamoClient> take();
  void give(std::unique_ptr<DynamoClient> c);

  DynamoOptions o_;
  std::mutex mu_;
  std::vector<std::unique_ptr<DynamoClient>> idle_;  // guarded by mu_
  ReaderPool pool_;  // last: its threads stop first, while the clients still exist
};

}  // namespace parley::store::dynamodb
