#include "delta_audit.h"

#include <algorithm>
#include <charconv>

#include <simdjson.h>

namespace bench {

namespace {

simdjson::dom::parser& parser() {
  thread_local simdjson::dom::parser p;
  return p;
}

// The fields of a JSON object, in order; false when it is not one.
bool fields_of(std::string_view json, std::vector<std::pair<std::string, std::string>>& out) {
  simdjson::dom::element e;
  simdjson::dom::object obj;
  if (parser().parse(json.data(), json.size()).get(e) || e.get_object().get(obj)) return false;
  out.clear();
  for (auto [k, v] : obj) out.emplace_back(std::string(k), simdjson::minify(v));
  return true;
}

int64_t int_of(std::string_view s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

bool DeltaStreams::plausible(std::string_view from,
                             const std::vector<std::pair<std::string, std::string>>& fields) {
  const std::string *t = nullptr, *x = nullptr, *y = nullptr;
  for (const auto& [k, v] : fields) {
    if (k == "t") t = &v;
    if (k == "x") x = &v;
    if (k == "y") y = &v;
  }
  if (!t && !x && !y) return true;  // not a bench body
  if (!t || !x || !y || from.size() < 2 || from[0] != 'u') return false;
  return int_of(*y) == int64_t(int_of(from.substr(1)) % 1000);
}

bool DeltaStreams::full(uint64_t sid, std::string_view from, std::string_view body) {
  Stream& s = streams_[sid];
  s.from.assign(from);
  return fields_of(body, s.fields);
}

bool DeltaStreams::apply(uint64_t sid, std::string_view set, std::string_view unset, int64_t& t_out) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return false;
  Stream& s = it->second;
  if (!unset.empty()) {
    simdjson::dom::element e;
    simdjson::dom::array keys;
    if (parser().parse(unset.data(), unset.size()).get(e) || e.get_array().get(keys)) return false;
    for (auto k : keys) {
      std::string_view key;
      if (k.get_string().get(key)) return false;
      std::erase_if(s.fields, [&](const auto& f) { return f.first == key; });
    }
  }
  std::vector<std::pair<std::string, std::string>> changed;
  if (!fields_of(set, changed)) return false;
  for (auto& [k, v] : changed) {
    auto f = std::find_if(s.fields.begin(), s.fields.end(), [&](const auto& x) { return x.first == k; });
    if (f != s.fields.end()) {
      f->second = std::move(v);
    } else {
      s.fields.emplace_back(std::move(k), std::move(v));
    }
  }
  t_out = 0;
  for (const auto& [k, v] : s.fields) {
    if (k == "t") t_out = int_of(v);
  }
  return plausible(s.from, s.fields);
}

}  // namespace bench
