// Reading fields of a server frame without trusting it: every accessor checks
// the type and answers a default instead of throwing (nlohmann's typed getters
// throw on a mismatch; a hostile or buggy server must not reach them).
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parley/json.h"

namespace parley::detail {

inline const Json* field(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

inline bool get_int(const Json& obj, std::string_view key, int64_t& out) {
  const Json* v = field(obj, key);
  if (!v) return false;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    out = v->get<int64_t>();
    return true;
  }
  return false;
}

inline int64_t int_or(const Json& obj, std::string_view key, int64_t fallback) {
  int64_t v = fallback;
  return get_int(obj, key, v) ? v : fallback;
}

inline std::string str_or(const Json& obj, std::string_view key, std::string fallback = {}) {
  const Json* v = field(obj, key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

inline const std::string* str_ptr(const Json& obj, std::string_view key) {
  const Json* v = field(obj, key);
  return v && v->is_string() ? v->get_ptr<const std::string*>() : nullptr;
}

inline bool bool_or(const Json& obj, std::string_view key, bool fallback) {
  const Json* v = field(obj, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

/// The strings of an array field; other elements are skipped.
inline std::vector<std::string> strings(const Json& obj, std::string_view key) {
  std::vector<std::string> out;
  const Json* v = field(obj, key);
  if (!v || !v->is_array()) return out;
  for (const Json& e : *v) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

/// Moves a field's value out (null when absent).
inline Json take(Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? Json() : std::move(*it);
}

/// A rid the client chose (integers only); 0 when absent or foreign.
inline int64_t rid_of(const Json& obj) { return int_or(obj, "rid", 0); }

}  // namespace parley::detail
