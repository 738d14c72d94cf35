#include "common/error_code.h"

#include "common/json_writer.h"

namespace parley {

std::string_view wire_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest: return "bad_request";
    case ErrorCode::kUnauthorized: return "unauthorized";
    case ErrorCode::kForbidden: return "forbidden";
    case ErrorCode::kTooLarge: return "too_large";
    case ErrorCode::kRateLimited: return "rate_limited";
    case ErrorCode::kBackpressure: return "backpressure";
    case ErrorCode::kQuotaExceeded: return "quota_exceeded";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kStaleGeneration: return "stale_generation";
    case ErrorCode::kOutOfRange: return "out_of_range";
  }
  return "internal";
}

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest: return 400;
    case ErrorCode::kUnauthorized: return 401;
    case ErrorCode::kForbidden: return 403;
    case ErrorCode::kTooLarge: return 413;
    case ErrorCode::kRateLimited: return 429;
    case ErrorCode::kQuotaExceeded: return 429;
    case ErrorCode::kBackpressure: return 503;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kInternal: return 500;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kStaleGeneration: return 409;
    case ErrorCode::kOutOfRange: return 400;
  }
  return 500;
}

std::string error_json(ErrorCode code, std::string_view msg, int retry_ms) {
  std::string body;
  JsonWriter w(body);
  w.begin_object().field("code", wire_name(code)).field("msg", msg);
  if (retry_ms > 0) w.field_num("retry_ms", retry_ms);
  w.end_object();
  return body;
}

}  // namespace parley
