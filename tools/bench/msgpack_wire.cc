#include "msgpack_wire.h"

#include <cstdint>
#include <cstring>

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

}  // namespace

bool pack_json(std::string_view json, std::string& out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element e;
  if (parser.parse(json.data(), json.size()).get(e)) return false;
  pack(out, e);
  return true;
}

}  // namespace bench::mpk
