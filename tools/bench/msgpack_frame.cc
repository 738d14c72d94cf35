#include "msgpack_frame.h"

#include <msgpack.hpp>

namespace bench {

namespace {

// str and bin point into the frame, which outlives the callbacks.
bool reference_all(msgpack::type::object_type, size_t, void*) { return true; }

std::string_view str_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

bool get_u64(const msgpack::object& o, uint64_t& out) {
  if (o.type != msgpack::type::POSITIVE_INTEGER) return false;
  out = o.via.u64;
  return true;
}

bool get_i64(const msgpack::object& o, int64_t& out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    out = int64_t(o.via.u64);
    return true;
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    out = o.via.i64;
    return true;
  }
  return false;
}

// body.t of a bench body (a map whose `t` is an integer), or 0.
int64_t map_t(const msgpack::object& body) {
  for (uint32_t i = 0; i < body.via.map.size; ++i) {
    const auto& kv = body.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && str_of(kv.key) == "t") {
      int64_t t = 0;
      return get_i64(kv.val, t) ? t : 0;
    }
  }
  return 0;
}

}  // namespace

const msgpack::object* MsgpackFrameReader::unpack(const char* data, size_t len) {
  // Frames arrive one after another: the zone's first chunk is kept, so a
  // frame that fits in it allocates nothing.
  zone_.clear();
  try {
    size_t off = 0;
    // Every element takes at least a byte: a count past the frame's length is
    // a lie, refused before the zone reserves room for it (fuzz_bench_delta
    // found an array32 header asking for 64 GiB).
    const auto n = static_cast<std::size_t>(len);
    const msgpack::unpack_limit limit(n, n, n, n, n, 512);
    root_ = msgpack::unpack(zone_, data, len, off, reference_all, nullptr, limit);
    if (off != len) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  return &root_;
}

bool MsgpackFrameReader::read_sds_entry(const msgpack::object& sid, const msgpack::object& value, Event& e) {
  using T = msgpack::type::object_type;
  e.op = Op::kSd;
  if (!get_u64(sid, e.sid) || e.sid == 0) return false;
  const msgpack::object* body = &value;
  if (value.type == T::ARRAY) {
    const uint32_t n = value.via.array.size;
    if (n < 2 || n > 3) return false;
    const msgpack::object& pos = value.via.array.ptr[0];
    if (pos.type == T::ARRAY) {
      e.mp_pos = &pos;
    } else if (pos.type != T::NIL) {
      return false;
    }
    body = &value.via.array.ptr[1];
    if (n == 3) {
      if (value.via.array.ptr[2].type != T::ARRAY) return false;
      e.mp_unset = &value.via.array.ptr[2];
    }
  }
  if (body->type != T::MAP) return false;
  e.mp_body = body;
  e.sent_ns = map_t(*body);
  return true;
}

bool MsgpackFrameReader::read_map(const msgpack::object& m, Event& ev, const msgpack::object*& page,
                                  const msgpack::object*& entries) {
  if (m.type != msgpack::type::MAP) return false;
  using T = msgpack::type::object_type;
  for (uint32_t i = 0; i < m.via.map.size; ++i) {
    const auto& kv = m.via.map.ptr[i];
    if (kv.key.type != T::STR) return false;
    const std::string_view key = str_of(kv.key);
    const msgpack::object& v = kv.val;
    const bool is_str = v.type == T::STR;
    if (key == "op") {
      if (!is_str) return false;
      ev.op = op_from(str_of(v));
    } else if (key == "seq") {
      if (!get_u64(v, ev.seq)) return false;
    } else if (key == "ch") {
      if (!is_str) return false;
      ev.ch = str_of(v);
    } else if (key == "id") {
      if (is_str) ev.id_ok = parse_id(str_of(v), ev.id);
    } else if (key == "rid") {
      int64_t r;
      if (get_i64(v, r)) ev.rid = r;
    } else if (key == "body") {
      if (v.type == T::MAP) {
        ev.mp_body = &v;
        ev.sent_ns = map_t(v);
      }
    } else if (key == "sid") {
      if (!get_u64(v, ev.sid)) return false;
    } else if (key == "from") {
      if (!is_str) return false;
      ev.from = str_of(v);
    } else if (key == "key") {
      if (!is_str) return false;
      ev.key = str_of(v);
    } else if (key == "pos") {
      if (v.type != T::ARRAY) return false;
      ev.mp_pos = &v;
    } else if (key == "unset") {
      if (v.type != T::ARRAY) return false;
      ev.mp_unset = &v;
    } else if (key == "dup") {
      if (v.type == T::BOOLEAN) ev.dup = v.via.boolean;
    } else if (key == "recovered") {
      if (v.type == T::BOOLEAN) ev.recovered = v.via.boolean;
    } else if (key == "code") {
      if (is_str) ev.code = str_of(v);
    } else if (key == "retry_ms") {
      int64_t r;
      if (get_i64(v, r)) ev.retry_ms = r;
    } else if (key == "msgs") {
      if (v.type != T::ARRAY) return false;
      page = &v;
    } else if (key == "d") {
      if (v.type != T::ARRAY) return false;
      entries = &v;
    }
  }
  return true;
}

}  // namespace bench
