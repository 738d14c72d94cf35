// Client-visible error codes of PROTOCOL.md, and their texts, in one place.
#pragma once

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
};
inline constexpr int kErrorCodeCount = 9;

// The wire name, e.g. "rate_limited".
std::string_view wire_name(ErrorCode code);
// The HTTP status the HTTP API answers with.
int http_status(ErrorCode code);

// WebSocket close codes the protocol assigns.
inline constexpr int kCloseUnauthorized = 4001;
inline constexpr int kCloseBadVersion = 4002;
inline constexpr int kCloseQuota = 4008;
inline constexpr int kCloseSlowConsumer = 4010;
inline constexpr int kCloseTooBig = 1009;

}  // namespace parley
