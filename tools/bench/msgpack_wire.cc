#include "msgpack_wire.h"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>
#include <msgpack.hpp>
#include <simdjson.h>

namespace bench::mpk {

namespace {

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += char((v >> (8 * i)) & 0xff);
}

void pack_str(std::string& out, std::string_view s) {
  const size_t n = s.size();
  if (n < 32) {
    out += char(0xa0 | n);
  } else if (n < 256) {
    out += char(0xd9);
    put_be(out, n, 1);
  } else if (n < 65536) {
    out += char(0xda);
    put_be(out, n, 2);
  } else {
    out += char(0xdb);
    put_be(out, n, 4);
  }
  out.append(s);
}

void pack_container(std::string& out, size_t n, bool map) {
  if (n < 16) {
    out += char((map ? 0x80 : 0x90) | n);
  } else if (n < 65536) {
    out += char(map ? 0xde : 0xdc);
    put_be(out, n, 2);
  } else {
    out += char(map ? 0xdf : 0xdd);
    put_be(out, n, 4);
  }
}

void pack_int(std::string& out, int64_t v) {
  if (v >= 0 && v < 128) {
    out += char(v);
  } else if (v < 0 && v >= -32) {
    out += char(int8_t(v));
  } else {
    out += char(0xd3);
    put_be(out, uint64_t(v), 8);
  }
}

void pack(std::string& out, simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::OBJECT: {
      simdjson::dom::object o = e;
      pack_container(out, o.size(), true);
      for (auto [k, v] : o) {
        pack_str(out, k);
        pack(out, v);
      }
      return;
    }
    case T::ARRAY: {
      simdjson::dom::array a = e;
      pack_container(out, a.size(), false);
      for (auto v : a) pack(out, v);
      return;
    }
    case T::STRING: return pack_str(out, std::string_view(e));
    case T::INT64: return pack_int(out, int64_t(e));
    case T::UINT64:
      out += char(0xcf);
      return put_be(out, uint64_t(e), 8);
    case T::DOUBLE: {
      const double d = double(e);
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      out += char(0xcb);
      return put_be(out, bits, 8);
    }
    case T::BOOL: out += char(bool(e) ? 0xc3 : 0xc2); return;
    case T::NULL_VALUE: out += char(0xc0); return;
  }
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    } else {
      out += char(c);
    }
  }
  out += '"';
}

void base64(std::string& out, const char* p, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t(uint8_t(p[i])) << 16;
    if (i + 1 < n) v |= uint32_t(uint8_t(p[i + 1])) << 8;
    if (i + 2 < n) v |= uint8_t(p[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
}

bool to_json(std::string& out, const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: out += "null"; return true;
    case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; return true;
    case msgpack::type::POSITIVE_INTEGER: fmt::format_to(std::back_inserter(out), "{}", o.via.u64); return true;
    case msgpack::type::NEGATIVE_INTEGER: fmt::format_to(std::back_inserter(out), "{}", o.via.i64); return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: fmt::format_to(std::back_inserter(out), "{}", o.via.f64); return true;
    case msgpack::type::STR: json_string(out, std::string_view(o.via.str.ptr, o.via.str.size)); return true;
    case msgpack::type::BIN:
      out += R"({"$bin":")";
      base64(out, o.via.bin.ptr, o.via.bin.size);
      out += "\"}";
      return true;
    case msgpack::type::ARRAY:
      out += '[';
      for (uint32_t i = 0; i < o.via.array.size; ++i) {
        if (i) out += ',';
        if (!to_json(out, o.via.array.ptr[i])) return false;
      }
      out += ']';
      return true;
    case msgpack::type::MAP:
      out += '{';
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const auto& kv = o.via.map.ptr[i];
        if (kv.key.type != msgpack::type::STR) return false;
        if (i) out += ',';
        json_string(out, std::string_view(kv.key.via.str.ptr, kv.key.via.str.size));
        out += ':';
        if (!to_json(out, kv.val)) return false;
      }
      out += '}';
      return true;
    default: return false;  // ext: never sent by a server
  }
}

}  // namespace

bool pack_json(std::string_view json, std::string& out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element e;
  if (parser.parse(json.data(), json.size()).get(e)) return false;
  pack(out, e);
  return true;
}

bool unpack_to_json(const char* data, size_t len, std::string& out) {
  try {
    size_t off = 0;
    msgpack::object_handle h = msgpack::unpack(data, len, off);
    if (off != len) return false;
    return to_json(out, h.get());
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace bench::mpk
