// Client-visible error codes of PROTOCOL.md, and their texts, in one place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace parley {

enum class ErrorCode {
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kTooLarge,
  kRateLimited,
  kBackpressure,
  kQuotaExceeded,
  kUnavailable,
  kInternal,
  // Event streams (PROTOCOL.md "Event streams and leaderboards").
  kNotFound,         // unknown topic, board, partition or group
  kStaleGeneration,  // a commit with another gen, or from outside the group
  kOutOfRange,       // an offset outside what a partition holds; carries p/earliest/latest
};
inline constexpr int kErrorCodeCount = 12;

// What an out_of_range answer carries besides code and msg (PROTOCOL.md): the
// partition, its first kept offset and the log's end + 1.
struct OffsetRange {
  uint32_t p = 0;
  uint64_t earliest = 0;
  uint64_t latest = 0;
};

// The wire name, e.g. "rate_limited".
std::string_view wire_name(ErrorCode code);
// The HTTP status the HTTP API answers with.
int http_status(ErrorCode code);
// The JSON of an error, PROTOCOL.md's {"code","msg"} with "retry_ms" when > 0:
// the one body of every error answered over HTTP (net::error_response).
std::string error_json(ErrorCode code, std::string_view msg, int retry_ms = 0);

// WebSocket close codes the protocol assigns.
inline constexpr int kCloseUnauthorized = 4001;
inline constexpr int kCloseBadVersion = 4002;
inline constexpr int kCloseQuota = 4008;
inline constexpr int kCloseSlowConsumer = 4010;
inline constexpr int kCloseTooBig = 1009;

}  // namespace parley
