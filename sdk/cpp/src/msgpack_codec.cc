// The MessagePack codec (PROTOCOL.md "Binary encoding: MessagePack"), on
// nlohmann's MessagePack reader through its SAX interface, not Debian's
// msgpack-cxx (which the server uses): msgpack-cxx throws (ext_size_overflow,
// bad_alloc in its parser), and this core must build with -fno-exceptions for
// Unreal; nlohmann is already the SDK's value type and its reader reports
// every error to the SAX handler, thrown or not. The SAX handler builds the
// values itself so that it can bound them as the server does: depth 1,024 (a
// scalar counting as a level), str valid UTF-8 (map keys too, and keys must
// be str: the reader refuses other key types), no ext, floats finite, `bin`
// only inside a `body` (it becomes {"$bin": standard padded base64}, what a
// JSON connection gets, so the application sees one body whichever encoding
// carried it). Counts need no bound of their own: the handler reserves
// nothing for a declared count, and the reader stops at the frame's end.
//
// Writing is a walk of our own rather than nlohmann's to_msgpack: a body's
// {"$bin": canonical base64} must go out as `bin`, which to_msgpack would need
// a rewritten copy of the frame for.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "parley/codec.h"

namespace parley {
namespace {

constexpr std::size_t kMaxDepth = 1024;

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

template <typename Bytes>
std::string base64(const Bytes& b) {
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return uint32_t{static_cast<unsigned char>(b[k])}; };
  for (; i + 2 < b.size(); i += 3) {
    const uint32_t n = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += {kB64[n >> 18], kB64[(n >> 12) & 63], kB64[(n >> 6) & 63], kB64[n & 63]};
  }
  if (i + 1 == b.size()) {
    const uint32_t n = at(i) << 16;
    out += {kB64[n >> 18], kB64[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == b.size()) {
    const uint32_t n = (at(i) << 16) | (at(i + 1) << 8);
    out += {kB64[n >> 18], kB64[(n >> 12) & 63], kB64[(n >> 6) & 63], '='};
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n = 0;
    uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07;
    else return false;
    if (end - p <= n) return false;
    for (int k = 1; k <= n; ++k) {
      if ((p[k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[k] & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    p += n + 1;
  }
  return true;
}

// Builds the frame's values, refusing what PROTOCOL.md's mapping refuses.
class Builder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  Json root;

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(number_integer_t v) { return put(v); }
  bool number_unsigned(number_unsigned_t v) { return put(v); }
  bool number_float(number_float_t v, const string_t&) { return std::isfinite(v) && put(v); }
  bool string(string_t& v) { return valid_utf8(v) && put(std::move(v)); }
  bool binary(binary_t& v) {
    // nlohmann reads ext as binary with a subtype: ext is refused.
    if (v.has_subtype() || !in_body()) return false;
    return put(Json{{"$bin", base64(v)}});
  }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool key(string_t& k) {
    if (!valid_utf8(k)) return false;
    levels_.back().key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_array() { return close(); }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return false;
  }

 private:
  struct Level {
    Json* value;
    bool body;        // this container is (inside) a body
    std::string key;  // an object's current key
  };

  bool in_body() const { return !levels_.empty() && (levels_.back().body || levels_.back().key == "body"); }

  Json* place(Json&& v) {
    if (levels_.size() >= kMaxDepth) return nullptr;
    if (levels_.empty()) {
      // A frame is a map, or an array of maps.
      if (!v.is_object() && !v.is_array()) return nullptr;
      root = std::move(v);
      return &root;
    }
    Level& top = levels_.back();
    if (top.value->is_array()) {
      if (levels_.size() == 1 && !v.is_object()) return nullptr;
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    Json& slot = (*top.value)[top.key];
    slot = std::move(v);
    return &slot;
  }
  bool put(Json v) { return place(std::move(v)) != nullptr; }
  bool open(Json v) {
    const bool body = in_body();
    Json* at = place(std::move(v));
    if (!at) return false;
    levels_.push_back(Level{at, body, {}});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return true;
  }

  std::vector<Level> levels_;
};

// Bytes of strictly canonical, padded standard base64, or false (then the
// object stays an object, as the server keeps it).
bool canonical_base64(const std::string& s, std::string& out) {
  if (s.size() % 4 != 0) return false;
  out.clear();
  out.reserve(s.size() / 4 * 3);
  for (std::size_t i = 0; i < s.size(); i += 4) {
    const bool last = i + 4 == s.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[i + k]);
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return false;  // a character after padding
      v[k] = b64_value(c);
      if (v[k] < 0) return false;
    }
    const uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    // Bits the padding leaves over must be zero, else two texts name one value.
    if ((pad == 1 && (n & 0xff)) || (pad == 2 && (n & 0xffff))) return false;
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return true;
}

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  bool value(const Json& v, bool body, std::size_t depth) {
    if (depth >= kMaxDepth) return false;
    switch (v.type()) {
      case Json::value_t::null: return byte(0xc0);
      case Json::value_t::boolean: return byte(v.get<bool>() ? 0xc3 : 0xc2);
      case Json::value_t::number_unsigned: return uint(v.get<uint64_t>());
      case Json::value_t::number_integer: {
        const int64_t n = v.get<int64_t>();
        if (n >= 0) return uint(static_cast<uint64_t>(n));
        if (n >= -32) return byte(static_cast<uint8_t>(n));
        if (n >= INT8_MIN) return byte(0xd0) && be(static_cast<uint8_t>(n), 1);
        if (n >= INT16_MIN) return byte(0xd1) && be(static_cast<uint16_t>(n), 2);
        if (n >= INT32_MIN) return byte(0xd2) && be(static_cast<uint32_t>(n), 4);
        return byte(0xd3) && be(static_cast<uint64_t>(n), 8);
      }
      case Json::value_t::number_float: {
        const double d = v.get<double>();
        if (!std::isfinite(d)) return false;
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        return byte(0xcb) && be(bits, 8);
      }
      case Json::value_t::string: return str(v.get_ref<const std::string&>());
      case Json::value_t::array:
        head(v.size(), 0x90, 0xdc, 0xdd);
        for (const Json& e : v) {
          if (!value(e, body, depth + 1)) return false;
        }
        return true;
      case Json::value_t::object: {
        if (body && v.size() == 1) {
          auto it = v.find("$bin");
          if (it != v.end() && it->is_string() && canonical_base64(it->get_ref<const std::string&>(), bytes_)) {
            return bin(bytes_);
          }
        }
        head(v.size(), 0x80, 0xde, 0xdf);
        for (auto it = v.begin(); it != v.end(); ++it) {
          str(it.key());
          if (!value(it.value(), body || it.key() == "body", depth + 1)) return false;
        }
        return true;
      }
      case Json::value_t::binary: return bin_of(v.get_binary());
      case Json::value_t::discarded: return false;
    }
    return false;
  }

 private:
  bool byte(uint8_t b) {
    out_ += static_cast<char>(b);
    return true;
  }
  bool be(uint64_t n, int bytes) {
    for (int k = bytes - 1; k >= 0; --k) out_ += static_cast<char>((n >> (8 * k)) & 0xff);
    return true;
  }
  bool uint(uint64_t n) {
    if (n < 128) return byte(static_cast<uint8_t>(n));
    if (n <= UINT8_MAX) return byte(0xcc) && be(n, 1);
    if (n <= UINT16_MAX) return byte(0xcd) && be(n, 2);
    if (n <= UINT32_MAX) return byte(0xce) && be(n, 4);
    return byte(0xcf) && be(n, 8);
  }
  void head(std::size_t n, uint8_t fix, uint8_t b16, uint8_t b32) {
    if (n < 16) byte(static_cast<uint8_t>(fix | n));
    else if (n <= UINT16_MAX) byte(b16), be(n, 2);
    else byte(b32), be(n, 4);
  }
  bool str(const std::string& s) {
    const std::size_t n = s.size();
    if (n < 32) byte(static_cast<uint8_t>(0xa0 | n));
    else if (n <= UINT8_MAX) byte(0xd9), be(n, 1);
    else if (n <= UINT16_MAX) byte(0xda), be(n, 2);
    else byte(0xdb), be(n, 4);
    out_ += s;
    return true;
  }
  bool bin(const std::string& b) {
    const std::size_t n = b.size();
    if (n <= UINT8_MAX) byte(0xc4), be(n, 1);
    else if (n <= UINT16_MAX) byte(0xc5), be(n, 2);
    else byte(0xc6), be(n, 4);
    out_ += b;
    return true;
  }
  bool bin_of(const Json::binary_t& b) { return bin(std::string(b.begin(), b.end())); }

  std::string& out_;
  std::string bytes_;
};

class MsgpackCodec final : public Codec {
 public:
  std::string_view name() const override { return "msgpack"; }
  bool binary() const override { return true; }

  bool encode(const Json& frame, std::string& out) const override {
    out.clear();
    if (!frame.is_object()) return false;
    return Writer(out).value(frame, false, 0);
  }

  bool decode(std::string_view bytes, std::vector<Json>& out) const override {
    Builder b;
    // strict: the frame is exactly one value, nothing after it.
    if (!Json::sax_parse(bytes.begin(), bytes.end(), &b, Json::input_format_t::msgpack, /*strict=*/true)) {
      return false;
    }
    if (b.root.is_object()) {
      out.push_back(std::move(b.root));
      return true;
    }
    if (!b.root.is_array()) return false;
    for (Json& e : b.root) out.push_back(std::move(e));
    return true;
  }
};

}  // namespace

Json make_bin(std::string_view bytes) { return Json{{"$bin", base64(bytes)}}; }

bool read_bin(const Json& value, std::string& bytes) {
  if (!value.is_object() || value.size() != 1) return false;
  auto it = value.find("$bin");
  return it != value.end() && it->is_string() && canonical_base64(it->get_ref<const std::string&>(), bytes);
}

std::shared_ptr<const Codec> msgpack_codec() {
  static const std::shared_ptr<const Codec> codec = std::make_shared<MsgpackCodec>();
  return codec;
}

}  // namespace parley
