#include "protocol/state_delta.h"

#include <algorithm>

namespace parley::protocol {

namespace {

constexpr size_t kMaxNesting = 1024;  // the JSON decoder's depth bound

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// s[i] is '"': the index after the closing quote, or npos.
size_t scan_string(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The index after the value starting at s[i], or npos. Containers are matched
// bracket for bracket (a stack of at most kMaxNesting); scalars are read up to
// the next delimiter and are not otherwise checked (the server's bodies were
// validated when they arrived).
size_t scan_value(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return scan_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::vector<char> open;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = scan_string(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') {
        if (open.size() >= kMaxNesting) return std::string_view::npos;
        open.push_back(c == '{' ? '}' : ']');
      } else if (c == '}' || c == ']') {
        if (open.empty() || open.back() != c) return std::string_view::npos;
        open.pop_back();
        if (open.empty()) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  const size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ':' &&
         s[i] != '"' && s[i] != '{' && s[i] != '[' && !is_space(s[i])) {
    ++i;
  }
  return i == start ? std::string_view::npos : i;
}

const BodyFields::Field* find_field(std::string_view body, const BodyFields& f, std::string_view key) {
  for (const auto& field : f.fields) {
    if (f.key(body, field) == key) return &field;
  }
  return nullptr;
}

void append_quoted_key(std::string& out, std::string_view key) {
  out += '"';
  out += key;  // parse_body_fields admits no escape in a key: nothing to escape
  out += '"';
}

}  // namespace

bool parse_body_fields(std::string_view body, BodyFields& out) {
  out.fields.clear();
  if (body.size() > UINT32_MAX) return false;
  size_t i = skip_space(body, 0);
  if (i >= body.size() || body[i] != '{') return false;
  i = skip_space(body, i + 1);
  if (i < body.size() && body[i] == '}') return skip_space(body, i + 1) == body.size();
  for (;;) {
    if (i >= body.size() || body[i] != '"') return false;
    const size_t key_start = i + 1;
    const size_t key_end = scan_string(body, i);
    if (key_end == std::string_view::npos) return false;
    const std::string_view key = body.substr(key_start, key_end - key_start - 1);
    if (key.find('\\') != std::string_view::npos) return false;
    i = skip_space(body, key_end);
    if (i >= body.size() || body[i] != ':') return false;
    i = skip_space(body, i + 1);
    const size_t val_end = scan_value(body, i);
    if (val_end == std::string_view::npos) return false;
    if (out.fields.size() >= kMaxDeltaFields) return false;
    out.fields.push_back({static_cast<uint32_t>(key_start), static_cast<uint32_t>(key.size()),
                          static_cast<uint32_t>(i), static_cast<uint32_t>(val_end - i)});
    i = skip_space(body, val_end);
    if (i >= body.size()) return false;
    if (body[i] == '}') break;
    if (body[i] != ',') return false;
    i = skip_space(body, i + 1);
  }
  if (skip_space(body, i + 1) != body.size()) return false;
  // A key twice: which one a client keeps is the JSON parser's choice, so such
  // a body has no one meaning to take a delta of.
  std::vector<std::string_view> keys;
  keys.reserve(out.fields.size());
  for (const auto& f : out.fields) keys.push_back(out.key(body, f));
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
}

void append_changed_fields(std::string& out, std::string_view base, const BodyFields& base_fields,
                           std::string_view next, const BodyFields& next_fields) {
  out += '{';
  bool first = true;
  for (const auto& f : next_fields.fields) {
    const std::string_view key = next_fields.key(next, f);
    const std::string_view value = next_fields.value(next, f);
    const BodyFields::Field* had = find_field(base, base_fields, key);
    if (had && base_fields.value(base, *had) == value) continue;
    if (!first) out += ',';
    first = false;
    append_quoted_key(out, key);
    out += ':';
    out += value;
  }
  out += '}';
}

bool has_removed_fields(std::string_view base, const BodyFields& base_fields, std::string_view next,
                        const BodyFields& next_fields) {
  for (const auto& f : base_fields.fields) {
    if (!find_field(next, next_fields, base_fields.key(base, f))) return true;
  }
  return false;
}

void append_removed_keys(std::string& out, std::string_view base, const BodyFields& base_fields,
                         std::string_view next, const BodyFields& next_fields) {
  out += '[';
  bool first = true;
  for (const auto& f : base_fields.fields) {
    const std::string_view key = base_fields.key(base, f);
    if (find_field(next, next_fields, key)) continue;
    if (!first) out += ',';
    first = false;
    append_quoted_key(out, key);
  }
  out += ']';
}

void append_state_delta(std::string& out, std::string_view base, const BodyFields& base_fields,
                        std::string_view next, const BodyFields& next_fields) {
  out += R"("body":)";
  append_changed_fields(out, base, base_fields, next, next_fields);
  if (has_removed_fields(base, base_fields, next, next_fields)) {
    out += R"(,"unset":)";
    append_removed_keys(out, base, base_fields, next, next_fields);
  }
}

bool apply_state_delta(std::string_view base, std::string_view set,
                       const std::vector<std::string>& unset, std::string& out) {
  BodyFields bf, sf;
  if (!parse_body_fields(base, bf) || !parse_body_fields(set, sf)) return false;
  out.clear();
  out += '{';
  bool first = true;
  auto field = [&](std::string_view key, std::string_view value) {
    if (!first) out += ',';
    first = false;
    append_quoted_key(out, key);
    out += ':';
    out += value;
  };
  for (const auto& f : bf.fields) {
    const std::string_view key = bf.key(base, f);
    if (std::find(unset.begin(), unset.end(), key) != unset.end()) continue;
    const BodyFields::Field* changed = find_field(set, sf, key);
    field(key, changed ? sf.value(set, *changed) : bf.value(base, f));
  }
  for (const auto& f : sf.fields) {
    const std::string_view key = sf.key(set, f);
    const BodyFields::Field* had = find_field(base, bf, key);
    // A key both unset and set is set (unset applies first).
    if (had && std::find(unset.begin(), unset.end(), key) == unset.end()) continue;
    field(key, sf.value(set, f));
  }
  out += '}';
  return true;
}

}  // namespace parley::protocol
