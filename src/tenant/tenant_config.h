// A tenant (one game) as configured: its keys, limits and namespaces.
// Immutable once published: a reload publishes a new one beside it
// (tenant/tenant_registry.h), so every thread may read one without a lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace parley {

// Which events a namespace forwards upstream (PROTOCOL.md "Upstream forwarding").
enum ForwardBit : uint8_t {
  kForwardJoin = 1,
  kForwardLeave = 2,
  kForwardMsg = 4,
  kForwardState = 8,
  kForwardUp = 16,
  kForwardEdit = 32,    // PROTOCOL.md "Moderation: delete and edit": its log entries
  kForwardDelete = 64,
};

// aoi_cell bounds: with positions of at most 1e15 units (protocol's
// kMaxPositionMagnitude), a cell index stays below 2^63.
inline constexpr double kMinAoiCell = 0.001;
inline constexpr double kMaxAoiCell = 1e12;

// A synchronous hook (PROTOCOL.md "Hooks"): the app server is asked before a
// connect, join or pub is accepted. Empty url: no hook.
struct HookConfig {
  std::string url;                 // http://host[:port]/path
  uint32_t timeout_ms = 200;       // from the ask to the answer, queueing included
  bool fail_open = false;          // on timeout, app server down or a bad answer: allow
  uint32_t max_inflight = 64;      // requests in flight, per event loop
  uint32_t queue = 256;            // asks waiting for a slot, per event loop; past it: backpressure
  bool operator==(const HookConfig&) const = default;
};

struct NamespaceConfig {
  bool durable = true;
  uint32_t history = 1000;        // latest messages reachable by since/history
  uint32_t tick_ms = 20;          // 0: send at once
  bool presence = true;
  uint32_t dedupe_window_s = 120;
  uint32_t history_ttl_s = 3600;  // durable = false: history older than this goes; 0: kept
  // PROTOCOL.md "Moderation": how long after sending its author may edit or
  // delete a message (moderators and the HTTP API always may); 0: never.
  uint32_t edit_window_s = 300;
  std::string upstream;           // http://host:port/path of the app server; empty: none
  uint8_t forward = kForwardJoin | kForwardLeave | kForwardUp;  // ForwardBit set
  uint32_t upstream_queue = 100'000;  // events waiting per namespace; overflow drops the oldest
  // Interest areas (PROTOCOL.md): the side of a grid cell in world units; a
  // positioned `state` reaches the members in its cell and the neighbouring
  // ones only. 0: no grid, every state reaches every member.
  double aoi_cell = 0;
  // PROTOCOL.md "State deltas": members that ask for it get only the fields of
  // a state's body that changed since the last one of its stream they got.
  bool state_delta = false;
  HookConfig hook_join;  // PROTOCOL.md "Hooks"
  HookConfig hook_pub;
  // PROTOCOL.md "Moderation": client pubs per second a channel takes on one
  // node, a token bucket holding one second of it. 0: no limit.
  uint32_t channel_pub_rate = 0;

  bool forwards(ForwardBit b) const { return !upstream.empty() && (forward & b) != 0; }
  bool operator==(const NamespaceConfig&) const = default;
};

// A topic of the event pipeline (PROTOCOL.md "Event streams and leaderboards").
struct TopicConfig {
  uint32_t partitions = 16;
  uint64_t retention = 1'000'000;  // events kept per partition; 0: by age only
  uint64_t retention_s = 86'400;   // 0: by count only
  uint32_t tick_ms = 0;            // 0: events frames at once
  uint32_t dedupe_window_s = 120;
  // The topic's leaderboards are snapshotted this often (when they changed); a
  // restart rebuilds them from the newest snapshot plus the events after it.
  // 0: no snapshots, a restart replays what the partitions hold.
  uint32_t snapshot_s = 30;
  bool operator==(const TopicConfig&) const = default;
};

// A leaderboard fed by one topic's events of one type.
struct LeaderboardConfig {
  std::string topic;
  std::string type;
  std::string member;              // body field naming the member
  std::string score;               // body field holding the score
  std::string agg = "sum";         // sum | max | min | last
  std::string round;               // body field starting a board per value; empty: none
  std::string order = "desc";      // desc | asc
  uint32_t top = 10;
  uint32_t interval_ms = 200;
  bool operator==(const LeaderboardConfig&) const = default;
};

struct TenantConfig {
  std::string id;
  std::string secret;             // HS256 key of client tokens
  std::string api_key;            // Bearer key of the HTTP API
  // After a reload that changes `secret` or `api_key`, the value it replaced is
  // still accepted for this long (docs/operations.md "Reloading the config").
  uint32_t rotation_overlap_s = 0;
  uint32_t max_connections = 50000;
  // Publish rates, token buckets holding one second of the rate. 0 means
  // unlimited (a trusted tenant, a load test), not "publishing forbidden":
  // forbidding is what the token's chans are for.
  uint32_t publish_per_sec = 20000;       // tenant-wide
  uint32_t publish_per_conn_sec = 100;
  uint32_t max_message_bytes = 64 * 1024;
  uint32_t max_channels_per_conn = 128;
  uint64_t max_queue_bytes = 4ull << 20;
  uint32_t events_per_sec = 0;            // tenant-wide events; 0: no limit
  // Mutes and bans in force at once (PROTOCOL.md "Moderation: mute, kick, ban"):
  // each is held by every loop of every node, so a bot banning at will must not
  // grow them without end. A new one past it is quota_exceeded.
  uint32_t max_sanctions = 100000;
  std::vector<std::string> allowed_origins;  // empty: any origin
  HookConfig hook_connect;                   // PROTOCOL.md "Hooks": asked at hello
  std::map<std::string, NamespaceConfig, std::less<>> namespaces;
  NamespaceConfig default_namespace;          // for namespaces not listed
  std::map<std::string, TopicConfig, std::less<>> topics;
  std::map<std::string, LeaderboardConfig, std::less<>> leaderboards;

  bool operator==(const TenantConfig&) const = default;

  const TopicConfig* topic(std::string_view name) const {
    auto it = topics.find(name);
    return it == topics.end() ? nullptr : &it->second;
  }

  const NamespaceConfig& ns(std::string_view name) const {
    auto it = namespaces.find(name);
    return it == namespaces.end() ? default_namespace : it->second;
  }
};

}  // namespace parley
