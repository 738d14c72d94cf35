// What crosses from a connection's loop to the hub shard that owns a channel.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "protocol/client_op.h"

#include "tenant/tenant_config.h"
#include "common/status.h"
#include "hub/membership.h"
#include "hub/subscriber.h"
#include "store/store.h"

namespace parley::hub {

struct JoinResult {
  Status status;
  uint64_t seq = 0;          // the channel's latest seq at the join
  bool recovered = false;
  uint32_t epoch = 1;        // the channel's store epoch (bumped by an accepted data loss)
  bool has_members = false;  // the namespace has presence
  std::vector<std::string> members;
  // The messages after `since`, encoded and comma-joined, in frames of a
  // bounded size. The hub sends them (as JSON arrays, counted as backfill) right
  // after `done` has run.
  std::vector<std::string> backfill;
};

struct JoinRequest {
  SubscriberRef sub;
  const TenantConfig* tenant = nullptr;
  std::string ch;
  std::optional<uint64_t> since;
  // Runs on sub's loop, in the task that registers the member for delivery there,
  // so before any later event of the channel; the backfill follows it. Runs once
  // per join, also when the member left meanwhile (then nothing is registered).
  std::function<void(JoinResult)> done;
  std::shared_ptr<MemberLink> link;  // set by Hub::join
};

struct HistoryResult {
  Status status;
  std::string msgs_json;  // comma-joined msg objects, oldest first
  size_t count = 0;
};

// `history` (WebSocket op or GET /v1/history): read through the owning shard, cut
// at the channel's committed seq, at most max_bytes of messages.
struct HistoryRequest {
  const TenantConfig* tenant = nullptr;
  std::string ch;
  std::optional<uint64_t> after;   // exactly one of after / before
  std::optional<uint64_t> before;
  uint32_t limit = 50;
  uint64_t max_bytes = 1 << 20;
  unsigned reply_loop = 0;
  std::function<void(HistoryResult)> done;  // on reply_loop
};

struct PublishRequest {
  const TenantConfig* tenant = nullptr;
  std::string ch;
  std::string from;       // user id, or "server" for the HTTP API
  uint64_t conn = 0;      // 0: the HTTP API (trusted, needs no join)
  std::string id;         // empty: no dedupe (HTTP publish without id)
  std::string body;
  int64_t arrived_ns = 0;  // steady time the frame arrived (ack latency)
  unsigned reply_loop = 0;
  // Runs on reply_loop once the outcome is known: the seq (dup: the original's), or why not.
  std::function<void(store::AppendOutcome)> done;
};

// `edit` / `delete` of a message (PROTOCOL.md "Moderation: delete and edit"):
// checked and sequenced by the channel's shard as a log entry of its own.
struct ModerateRequest {
  const TenantConfig* tenant = nullptr;
  std::string ch;
  bool edit = false;        // else delete
  uint64_t target = 0;      // the message's seq
  std::string body;         // edit: the new body (minified JSON)
  std::string from;         // who: a user id, or "server" for the HTTP API
  uint64_t conn = 0;        // 0: the HTTP API (may moderate every message)
  bool moderator = false;   // the token's `mod` claim: may moderate every message
  int64_t arrived_ns = 0;
  unsigned reply_loop = 0;
  // Runs on reply_loop: the event's own seq, or why not (not_found, forbidden, ...).
  std::function<void(store::AppendOutcome)> done;
};

struct StateRequest {
  const TenantConfig* tenant = nullptr;
  std::string ch;
  std::string from;
  uint64_t conn = 0;
  std::string key;
  std::string body;
  std::optional<protocol::Position> pos;
};

using MembersDone = std::function<void(std::vector<std::string>)>;

}  // namespace parley::hub
