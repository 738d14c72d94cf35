// A DynamoDB client for Parley's archive table: DescribeTable / CreateTable,
// BatchWriteItem, Query. JSON over HTTP(S) (http_client.h), each request signed
// with SigV4 (sigv4.h). No AWS SDK.
//
// The table (docs/operations.md, "DynamoDB"): partition key `channel` (S),
// "<tenant>#<channel>" with spread = 1, "<tenant>#<channel>#<seq % spread>"
// otherwise; sort key `seq` (N). Attributes ts (N), sender (S), msg_id (S),
// body (S); an empty sender or msg_id is left out (DynamoDB Local and older
// servers refuse empty strings) and read back as empty. An item's key is the
// message's (tenant, channel, seq), so writing the same WAL entry again puts the
// same item: replays are idempotent without a condition.
//
// A hot channel: one partition key takes at most 1,000 writes/s (1 KiB items).
// spread > 1 writes consecutive seqs of a channel to `spread` keys, so a
// channel can take spread x 1,000/s; a history read then queries every one of
// them and merges. There is no date in the key: the chat gateway's tenant#date
// key sent a whole day of a tenant's writes to one partition; here a day's
// writes spread over every channel (and suffix) of every tenant.
//
// Thread: one owner at a time; blocking (never on an event loop).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/archive_row.h"
#include "store/dynamodb/credentials.h"
#include "store/dynamodb/http_client.h"
#include "store/dynamodb/sigv4.h"
#include "store/store.h"

namespace parley::store::dynamodb {

struct DynamoOptions {
  std::string table = "parley_messages";
  std::string region;    // empty: AWS_REGION, then AWS_DEFAULT_REGION
  std::string endpoint;  // empty: https://dynamodb.<region>.amazonaws.com
  AwsCredentials creds;  // empty: the rest of the chain of credentials.h
  CredentialSource credentials;  // set by resolve_options (creds when they are given)
  uint32_t timeout_ms = 5000;
  uint32_t spread = 1;       // partition keys per channel (see above); fixed once data exists
  bool create_table = true;  // CreateTable (on-demand billing) when DescribeTable says missing
  std::string ca_file;       // empty: the system's trust store
};

// The options with the environment filled in; an error names what is missing.
Result<DynamoOptions> resolve_options(DynamoOptions o);

// One answer from DynamoDB: 200 with its JSON, or its error's type and message.
struct Reply {
  unsigned status = 0;
  std::string body;
  std::string type;     // "ThrottlingException" (the part after '#'), empty on 200
  std::string message;
  bool ok() const { return status == 200; }
  // Throttling: the request was refused for capacity; nothing was written.
  bool throttled() const;
};

// The partition key of a channel's seq.
std::string partition_key(const std::string& tenant, const std::string& channel, uint64_t seq, uint32_t spread);
// {"channel":{"S":...},"seq":{"N":...},...}
std::string item_json(const ArchiveRow& item, uint32_t spread);

class DynamoClient {
 public:
  explicit DynamoClient(DynamoOptions resolved);
  ~DynamoClient();

  // One signed call ("BatchWriteItem"); an error only when no answer came.
  Result<Reply> call(const std::string& op, std::string body);

  // The table exists and is ACTIVE after this; created when missing (with
  // create_table), waiting up to wait_ms for it to become ACTIVE.
  Status ensure_table(uint32_t wait_ms = 30'000);

  // BatchWriteItem of at most 25 items. Ok: the indexes (into `items`) that
  // DynamoDB left unprocessed (to be sent again). A throttled or failed call is
  // the Reply (nothing written), in `refused`.
  struct BatchResult {
    std::vector<size_t> unprocessed;
    std::optional<Reply> refused;
  };
  Result<BatchResult> batch_write(const std::vector<const ArchiveRow*>& items);

  // Messages of `id` with lo <= seq < hi, the `limit` oldest (or newest),
  // oldest first; consistent reads, every spread key merged.
  Result<std::vector<StoredMessage>> query(const ChannelId& id, uint64_t lo, uint64_t hi, uint32_t limit,
                                           bool newest);

  const DynamoOptions& options() const { return o_; }

 private:
  Result<std::vector<StoredMessage>> query_key(const std::string& pk, uint64_t lo, uint64_t hi, uint32_t limit,
                                               bool newest);
  DynamoOptions o_;
  std::unique_ptr<HttpClient> http_;
  CredentialProvider creds_;
};

}  // namespace parley::store::dynamodb
