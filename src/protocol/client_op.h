// A decoded client frame: one op of PROTOCOL.md with its fields validated.
// Pure data; produced by decode_client_op (decoder.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parley::protocol {

// How a connection's frames are written (PROTOCOL.md "Binary encoding: MessagePack").
enum class Encoding : uint8_t { kJson, kMsgpack };

enum class OpKind {
  kHello, kJoin, kLeave, kPub, kState, kUp, kHistory, kPing,
  // Event streams (PROTOCOL.md "Event streams and leaderboards").
  kEmit, kTail, kConsume, kCommit, kRank,
  // Moderation (PROTOCOL.md "Moderation: delete and edit").
  kEdit, kDelete,
};

// One event of an `emit`, validated.
struct EmitEvent {
  std::string key;   // 1-128 chars: picks the partition
  std::string type;  // 1-128 chars
  std::string id;    // empty: not deduplicated
  std::string body;  // minified JSON text as written
  bool operator==(const EmitEvent&) const = default;
};

// A `state`'s optional position (PROTOCOL.md "Interest areas"): 2 or 3
// finite coordinates in world units; z is 0 when dims == 2.
struct Position {
  double v[3] = {0, 0, 0};
  uint8_t dims = 0;
  bool operator==(const Position&) const = default;
};
// Coordinates beyond this are bad_request: a cell index stays exact in int64
// down to the smallest aoi_cell (kMinAoiCell).
inline constexpr double kMaxPositionMagnitude = 1e15;

// Where a `tail` starts.
enum class TailFrom { kLatest, kEarliest, kOffset };

struct ClientOp {
  OpKind kind = OpKind::kPing;
  // The client's rid re-encoded as JSON (`7` or `"abc"`), empty when absent.
  // Echoed verbatim in every reply to this op.
  std::string rid;

  // hello: exactly one of token / api_key (the api key only on TCP and Unix;
  // the session checks the transport).
  int64_t v = 0;
  std::string token;
  std::string api_key;
  Encoding enc = Encoding::kJson;  // hello's `enc` (TCP and Unix: the later frames' encoding)
  bool enc_unsupported = false;    // hello's `enc` names no encoding this server has
  bool cap_state_delta = false;    // hello's `caps` holds "state_delta" (PROTOCOL.md "State deltas")
  bool cap_state_delta_batch = false;  // and "state_delta_batch" ("Batched state deltas")

  // join / leave / pub / state / up / history
  std::string ch;
  std::optional<uint64_t> since;  // join

  // pub: id; state: key
  std::string id;
  std::string key;
  // pub / state / up: the body as minified JSON text, validated.
  std::string body;
  std::optional<Position> pos;  // state: where its sender is

  // edit / delete: the seq of the message they change (edit: `body` too).
  uint64_t target = 0;

  // history: exactly one of after/before is set.
  std::optional<uint64_t> after;
  std::optional<uint64_t> before;
  uint32_t limit = 50;  // capped at kHistoryMaxLimit

  // emit / tail / consume / commit, and leave when `topic` is set (then `ch` is empty).
  std::string topic;
  std::string group;               // consume, commit; leave: optional
  std::vector<EmitEvent> events;   // emit: 1-kMaxEmitEvents
  std::optional<uint32_t> p;       // tail (optional), commit (required)
  TailFrom from = TailFrom::kLatest;
  uint64_t from_off = 0;           // TailFrom::kOffset
  uint64_t gen = 0;                // commit
  uint64_t off = 0;                // commit
  // rank
  std::string board;
  std::string member;
  uint32_t around = 5;             // capped at kMaxRankAround
  std::optional<std::string> round;

  bool operator==(const ClientOp&) const = default;
};

inline constexpr uint32_t kHistoryDefaultLimit = 50;
inline constexpr uint32_t kHistoryMaxLimit = 1000;
inline constexpr size_t kMaxChannelLength = 128;
inline constexpr size_t kMaxEmitEvents = 1000;
inline constexpr size_t kMaxEventNameLength = 128;  // an event's key and type, a board member
inline constexpr uint32_t kDefaultRankAround = 5;
inline constexpr uint32_t kMaxRankAround = 100;

}  // namespace parley::protocol
