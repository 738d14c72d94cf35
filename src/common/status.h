// Errors as values on the data path: a Status is ok or (code, message).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/error_code.h"

namespace parley {

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string msg;
  int retry_ms = 0;  // > 0 only for retryable codes
};

inline std::string error_json(const Error& e) { return error_json(e.code, e.msg, e.retry_ms); }

class Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT: implicit by design
  static Status ok() { return {}; }
  bool is_ok() const { return !error_; }
  explicit operator bool() const { return is_ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  // Ok, or the error, without the value.
  Status status() const { return is_ok() ? Status::ok() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace parley
