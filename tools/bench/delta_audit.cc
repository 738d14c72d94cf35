#include "delta_audit.h"

#include <algorithm>
#include <charconv>

#include <msgpack.hpp>

namespace bench {

namespace {

// A field's key on the wire: JSON `"k":`, MessagePack a str header and the bytes.
size_t json_key_bytes(std::string_view k) { return k.size() + 3; }
size_t mp_key_bytes(std::string_view k) {
  const size_t n = k.size();
  return n + (n < 32 ? 1 : n < 256 ? 2 : n < 65536 ? 3 : 5);
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the JSON string whose opening quote is at s[i] (one past its
// closing quote), or npos.
size_t skip_string(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Calls f(key, value) for each top-level member of a JSON object, the key as
// written between its quotes and the value's text. False when `s` is not an
// object of that shape (values are not validated beyond their brackets: the
// frame reader has read the frame as JSON already).
template <class F>
bool each_json_member(std::string_view s, F&& f) {
  size_t i = 0;
  const size_t n = s.size();
  auto ws = [&] { while (i < n && is_ws(s[i])) ++i; };
  ws();
  if (i >= n || s[i] != '{') return false;
  ++i;
  ws();
  if (i < n && s[i] == '}') return true;
  while (i < n) {
    if (s[i] != '"') return false;
    const size_t kend = skip_string(s, i);
    if (kend == std::string_view::npos) return false;
    const std::string_view key = s.substr(i + 1, kend - i - 2);
    i = kend;
    ws();
    if (i >= n || s[i] != ':') return false;
    ++i;
    ws();
    const size_t v0 = i;
    int depth = 0;
    while (i < n) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        if (i == std::string_view::npos) return false;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
      ++i;
    }
    if (i >= n) return false;
    size_t v1 = i;
    while (v1 > v0 && is_ws(s[v1 - 1])) --v1;
    if (v1 == v0) return false;
    f(key, s.substr(v0, v1 - v0));
    if (s[i] == '}') return true;
    ++i;  // ','
    ws();
  }
  return false;
}

// Calls f(key) for each string of a JSON array of strings.
template <class F>
bool each_json_string(std::string_view s, F&& f) {
  size_t i = 0;
  const size_t n = s.size();
  auto ws = [&] { while (i < n && is_ws(s[i])) ++i; };
  ws();
  if (i >= n || s[i] != '[') return false;
  ++i;
  ws();
  if (i < n && s[i] == ']') return true;
  while (i < n) {
    if (s[i] != '"') return false;
    const size_t end = skip_string(s, i);
    if (end == std::string_view::npos) return false;
    f(s.substr(i + 1, end - i - 2));
    i = end;
    ws();
    if (i < n && s[i] == ']') return true;
    if (i >= n || s[i] != ',') return false;
    ++i;
    ws();
  }
  return false;
}

bool int_of(std::string_view s, int64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

struct StringSink {
  std::string* s;
  void write(const char* p, size_t n) { s->append(p, n); }
};

// The MessagePack bytes of one value, into `out`.
void packed(const msgpack::object& o, std::string& out) {
  out.clear();
  StringSink sink{&out};
  msgpack::packer<StringSink> pk(sink);
  pk.pack(o);
}

// One encoding's view of bodies, for the stream code below.
struct Json {
  static size_t key_bytes(std::string_view k) { return json_key_bytes(k); }
  // f(key, value_bytes, num, is_int) per member.
  template <class F>
  static bool each(std::string_view body, F&& f) {
    return each_json_member(body, [&](std::string_view k, std::string_view v) {
      int64_t num = 0;
      const bool is_int = int_of(v, num);
      f(k, v, num, is_int);
    });
  }
  template <class F>
  static bool each_unset(std::string_view unset, F&& f) {
    return unset.empty() || each_json_string(unset, f);
  }
  static std::string_view pos_bytes(std::string_view pos) { return pos; }
};

struct Mp {
  static size_t key_bytes(std::string_view k) { return mp_key_bytes(k); }
  template <class F>
  static bool each(const msgpack::object& body, F&& f) {
    if (body.type != msgpack::type::MAP) return false;
    thread_local std::string value;
    for (uint32_t i = 0; i < body.via.map.size; ++i) {
      const auto& kv = body.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) return false;
      packed(kv.val, value);
      int64_t num = 0;
      bool is_int = true;
      if (kv.val.type == msgpack::type::POSITIVE_INTEGER) {
        num = int64_t(kv.val.via.u64);
      } else if (kv.val.type == msgpack::type::NEGATIVE_INTEGER) {
        num = kv.val.via.i64;
      } else {
        is_int = false;
      }
      f(std::string_view(kv.key.via.str.ptr, kv.key.via.str.size), std::string_view(value), num, is_int);
    }
    return true;
  }
  template <class F>
  static bool each_unset(const msgpack::object* unset, F&& f) {
    if (!unset) return true;
    if (unset->type != msgpack::type::ARRAY) return false;
    for (uint32_t i = 0; i < unset->via.array.size; ++i) {
      const auto& k = unset->via.array.ptr[i];
      if (k.type != msgpack::type::STR) return false;
      f(std::string_view(k.via.str.ptr, k.via.str.size));
    }
    return true;
  }
  static std::string_view pos_bytes(const msgpack::object* pos) {
    if (!pos) return {};
    thread_local std::string bytes;
    packed(*pos, bytes);
    return bytes;
  }
};

BodyField* find_field(std::vector<BodyField>& fields, std::string_view key) {
  for (auto& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

// Sets one field of the stream's body; the ideal bytes it costs when its value changed.
template <class Enc>
uint64_t set_field(DeltaStreams::Stream& s, std::string_view k, std::string_view v, int64_t num,
                   bool is_int) {
  BodyField* f = find_field(s.fields, k);
  uint64_t cost = 0;
  if (!f) {
    f = &s.fields.emplace_back();
    f->key.assign(k);
    cost = Enc::key_bytes(k) + v.size();
  } else if (f->value != v) {
    cost = Enc::key_bytes(k) + v.size();
  }
  if (cost) f->value.assign(v);
  f->num = num;
  f->is_int = is_int;
  return cost;
}

template <class Enc>
uint64_t moved(DeltaStreams::Stream& s, std::string_view pos) {
  if (pos.empty()) return 0;
  uint64_t cost = 0;
  if (s.pos != pos) {
    cost = Enc::key_bytes("pos") + pos.size();
    s.pos.assign(pos);
  }
  return cost;
}

// A full body replaces the stream's: fields it lacks are removed (for the
// ideal, a removed key is its key's bytes).
template <class Enc, class Body>
bool replace(DeltaStreams::Stream& s, const Body& body, uint64_t& ideal) {
  thread_local std::vector<std::string_view> keys;
  keys.clear();
  uint64_t cost = 0;
  const bool ok = Enc::each(body, [&](std::string_view k, std::string_view v, int64_t num, bool is_int) {
    cost += set_field<Enc>(s, k, v, num, is_int);
    keys.push_back(k);
  });
  if (!ok) {
    s.fields.clear();
    return false;
  }
  if (keys.size() != s.fields.size()) {
    std::erase_if(s.fields, [&](const BodyField& f) {
      const bool gone = std::find(keys.begin(), keys.end(), f.key) == keys.end();
      if (gone) cost += Enc::key_bytes(f.key);
      return gone;
    });
  }
  ideal = cost;
  return true;
}

int64_t t_of(const std::vector<BodyField>& fields) {
  for (const auto& f : fields)
    if (f.key == "t" && f.is_int) return f.num;
  return 0;
}

template <class Enc, class Body, class Unset, class Pos>
bool apply_delta(DeltaStreams::Stream& s, const Body& set, const Unset& unset, const Pos& pos,
                 int64_t& t_out, uint64_t* ideal_out) {
  uint64_t cost = 0;
  bool ok = Enc::each_unset(unset, [&](std::string_view key) {
    const size_t before = s.fields.size();
    std::erase_if(s.fields, [&](const BodyField& f) { return f.key == key; });
    if (s.fields.size() != before) cost += Enc::key_bytes(key);
  });
  if (!ok) return false;
  ok = Enc::each(set, [&](std::string_view k, std::string_view v, int64_t num, bool is_int) {
    cost += set_field<Enc>(s, k, v, num, is_int);
  });
  if (!ok) return false;
  cost += moved<Enc>(s, Enc::pos_bytes(pos));
  if (ideal_out) *ideal_out = cost;
  t_out = t_of(s.fields);
  return DeltaStreams::plausible(s.from, s.fields);
}

template <class Enc, class Body, class Pos>
bool full_body(DeltaStreams::Stream& s, std::string_view from, const Body& body, const Pos& pos,
               uint64_t* ideal_out) {
  if (s.from != from) s.from.assign(from);
  uint64_t cost = 0;
  if (!replace<Enc>(s, body, cost)) return false;
  cost += moved<Enc>(s, Enc::pos_bytes(pos));
  if (ideal_out) *ideal_out = cost;
  return true;
}

DeltaStreams::Stream& named(std::unordered_map<std::string, DeltaStreams::Stream>& m,
                            std::string_view from, std::string_view key) {
  thread_local std::string name;
  name.assign(from);
  name += '\0';
  name.append(key);
  return m[name];
}

}  // namespace

bool DeltaStreams::plausible(std::string_view from, const std::vector<BodyField>& fields) {
  const BodyField *t = nullptr, *x = nullptr, *y = nullptr;
  for (const auto& f : fields) {
    if (f.key == "t") t = &f;
    if (f.key == "x") x = &f;
    if (f.key == "y") y = &f;
  }
  if (!t && !x && !y) return true;  // not a bench body
  if (!t || !x || !y || !y->is_int || from.size() < 2 || from[0] != 'u') return false;
  int64_t gid = 0;
  if (!int_of(from.substr(1), gid)) return false;
  return y->num == gid % 1000;
}

bool DeltaStreams::full(uint64_t sid, std::string_view from, std::string_view body,
                        uint64_t* ideal_out, std::string_view pos) {
  return full_body<Json>(streams_[sid], from, body, pos, ideal_out);
}

bool DeltaStreams::full(uint64_t sid, std::string_view from, const msgpack::object& body,
                        uint64_t* ideal_out, const msgpack::object* pos) {
  return full_body<Mp>(streams_[sid], from, body, pos, ideal_out);
}

bool DeltaStreams::apply(uint64_t sid, std::string_view set, std::string_view unset, int64_t& t_out,
                         uint64_t* ideal_out, std::string_view pos) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return false;
  return apply_delta<Json>(it->second, set, unset, pos, t_out, ideal_out);
}

bool DeltaStreams::apply(uint64_t sid, const msgpack::object& set, const msgpack::object* unset,
                         int64_t& t_out, uint64_t* ideal_out, const msgpack::object* pos) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return false;
  return apply_delta<Mp>(it->second, set, unset, pos, t_out, ideal_out);
}

uint64_t DeltaStreams::observe(std::string_view from, std::string_view key, std::string_view body,
                               std::string_view pos) {
  uint64_t cost = 0;
  full_body<Json>(named(named_, from, key), from, body, pos, &cost);
  return cost;
}

uint64_t DeltaStreams::observe(std::string_view from, std::string_view key,
                               const msgpack::object& body, const msgpack::object* pos) {
  uint64_t cost = 0;
  full_body<Mp>(named(named_, from, key), from, body, pos, &cost);
  return cost;
}

}  // namespace bench
