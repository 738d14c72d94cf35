#include "protocol/msgpack_encoder.h"

#include <msgpack.hpp>
#include <simdjson.h>

#include <cstring>

#include "protocol/base64.h"

namespace parley::protocol {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

struct Sink {
  std::string& out;
  void write(const char* data, size_t len) { out.append(data, len); }
};
using Packer = msgpack::packer<Sink>;

// Always a float 64: msgpack-c's pack_double writes integral values as
// integers, and the mapping keeps 1e3 a float (it has an exponent).
void pack_float64(Sink& sink, double d) {
  uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  char buf[9];
  buf[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  sink.write(buf, sizeof buf);
}

// An object of exactly one key, `$bin`, holding strict base64: its bytes.
bool bin_of(const simdjson::dom::object& obj, std::string& bytes) {
  if (obj.size() != 1) return false;
  const auto [key, value] = *obj.begin();
  std::string_view text;
  if (key != "$bin" || value.get_string().get(text)) return false;
  auto decoded = base64_decode(text);
  if (!decoded) return false;
  bytes = std::move(*decoded);
  return true;
}

// Depth is bounded by the parser (simdjson's 1024), so recursion is too.
void pack(Packer& pk, Sink& sink, const element& e, bool in_body) {
  switch (e.type()) {
    case element_type::OBJECT: {
      const simdjson::dom::object obj = e.get_object().value_unsafe();
      if (in_body) {
        thread_local std::string bytes;
        if (bin_of(obj, bytes)) {
          pk.pack_bin(static_cast<uint32_t>(bytes.size()));
          pk.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
          return;
        }
      }
      pk.pack_map(static_cast<uint32_t>(obj.size()));
      for (const auto [key, value] : obj) {
        pk.pack_str(static_cast<uint32_t>(key.size()));
        pk.pack_str_body(key.data(), static_cast<uint32_t>(key.size()));
        pack(pk, sink, value, in_body || key == "body");
      }
      return;
    }
    case element_type::ARRAY: {
      const simdjson::dom::array arr = e.get_array().value_unsafe();
      pk.pack_array(static_cast<uint32_t>(arr.size()));
      for (const element item : arr) pack(pk, sink, item, in_body);
      return;
    }
    case element_type::STRING: {
      const std::string_view s = e.get_string().value_unsafe();
      pk.pack_str(static_cast<uint32_t>(s.size()));
      pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
      return;
    }
    case element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      if (v < 0) {
        pk.pack_int64(v);
      } else {
        pk.pack_uint64(static_cast<uint64_t>(v));
      }
      return;
    }
    case element_type::UINT64:
      pk.pack_uint64(e.get_uint64().value_unsafe());
      return;
    case element_type::DOUBLE:
      pack_float64(sink, e.get_double().value_unsafe());
      return;
    case element_type::BOOL:
      if (e.get_bool().value_unsafe()) {
        pk.pack_true();
      } else {
        pk.pack_false();
      }
      return;
    case element_type::NULL_VALUE:
      pk.pack_nil();
      return;
  }
}

}  // namespace

bool append_msgpack_from_json(std::string& out, std::string_view json, bool is_body) {
  thread_local simdjson::dom::parser parser;
  element root;
  if (parser.parse(json.data(), json.size()).get(root)) return false;
  Sink sink{out};
  Packer pk(sink);
  pack(pk, sink, root, is_body);
  return true;
}

void append_msgpack_array_header(std::string& out, uint32_t n) {
  Sink sink{out};
  Packer(sink).pack_array(n);
}

}  // namespace parley::protocol
