// Errors and results the SDK hands to the application. Nothing in the API
// throws: every failure is an Error value delivered to a callback.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace parley {

/// A failure: a PROTOCOL.md error code (`rate_limited`, `forbidden`, ...) or
/// one of the SDK's own: `timeout`, `disconnected`, `closed`, `left`,
/// `bad_frame`, `queue_full`, `transport`.
struct Error {
  std::string code;
  std::string message;
  /// The server's `retry_ms`, or -1 when it gave none.
  int64_t retry_ms = -1;

  /// rate_limited, backpressure or unavailable: the same request may succeed later.
  bool retryable() const { return is_retryable(code); }
  static bool is_retryable(const std::string& code) {
    return code == "rate_limited" || code == "backpressure" || code == "unavailable";
  }
};

/// A value or an Error; what completion callbacks receive.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  /// Only when ok().
  const T& value() const { return *std::get_if<0>(&v_); }
  T& value() { return *std::get_if<0>(&v_); }
  /// Only when !ok().
  const Error& error() const { return *std::get_if<1>(&v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace parley
