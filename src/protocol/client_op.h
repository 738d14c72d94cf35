// A decoded client frame: one op of PROTOCOL.md with its fields validated.
// Pure data; produced by decode_client_op (decoder.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace parley::protocol {

enum class OpKind { kHello, kJoin, kLeave, kPub, kState, kUp, kHistory, kPing };

struct ClientOp {
  OpKind kind = OpKind::kPing;
  // The client's rid re-encoded as JSON (`7` or `"abc"`), empty when absent.
  // Echoed verbatim in every reply to this op.
  std::string rid;

  // hello
  int64_t v = 0;
  std::string token;

  // join / leave / pub / state / up / history
  std::string ch;
  std::optional<uint64_t> since;  // join

  // pub: id; state: key
  std::string id;
  std::string key;
  // pub / state / up: the body as minified JSON text, validated.
  std::string body;

  // history: exactly one of after/before is set.
  std::optional<uint64_t> after;
  std::optional<uint64_t> before;
  uint32_t limit = 50;  // capped at kHistoryMaxLimit
};

inline constexpr uint32_t kHistoryDefaultLimit = 50;
inline constexpr uint32_t kHistoryMaxLimit = 1000;
inline constexpr size_t kMaxIdLength = 64;       // pub id, state key, user id
inline constexpr size_t kMaxChannelLength = 128;

}  // namespace parley::protocol
