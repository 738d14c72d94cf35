// One message of the persister's archive, as every sink stores it: what a WAL
// entry holds (persist/wal_entry.h reads it), the row PostgreSQL inserts
// (persist/archive_writer.h) and the item DynamoDB puts
// (dynamodb/dynamo_client.h). One type, so a batch goes to both sinks without
// a copy.
#pragma once

#include <cstdint>
#include <string>

namespace parley::store {

struct ArchiveRow {
  std::string tenant;
  std::string channel;
  uint64_t seq = 0;
  int64_t ts_ms = 0;
  std::string sender;
  std::string msg_id;
  std::string body;
};

}  // namespace parley::store
