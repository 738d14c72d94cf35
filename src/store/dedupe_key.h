// DedupeKey: the identity under which a message is deduplicated, (sender, client
// message id), as one byte string: varint(len(from)) from id.
//
// Length-prefixed rather than joined with a separator: with a separator, ("a",
// "b\0c") and ("a\0b", "c") were the same key, and a message of one was answered
// `dup` with the other's seq. Here the first field's length is explicit and `id` is
// the rest, so two different pairs can never share bytes, whatever they hold.
// Beside ChannelId (channel_id.h): the hub's dedupe table, the memory store and the
// embedded store's dedupe records all build their keys through this type.
//
// A plain value: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parley::store {

class DedupeKey {
 public:
  DedupeKey() = default;
  DedupeKey(std::string_view from, std::string_view id) {
    bytes_.reserve(from.size() + id.size() + 2);
    append(bytes_, from, id);
  }

  // Appends the bytes of DedupeKey(from, id) to `out` (the store's writer builds
  // record keys in reused buffers).
  static void append(std::string& out, std::string_view from, std::string_view id) {
    for (uint64_t n = from.size(); ; n >>= 7) {
      if (n < 0x80) {
        out.push_back(static_cast<char>(n));
        break;
      }
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    out.append(from).append(id);
  }

  // Parses bytes written by bytes(); nullopt when they are not such a key (a
  // record read from disk is outside data: never assumed well-formed).
  static std::optional<DedupeKey> from_bytes(std::string_view bytes) {
    size_t at = 0;
    uint64_t n = 0;
    if (!read_len(bytes, at, n) || n > bytes.size() - at) return std::nullopt;
    DedupeKey k;
    k.bytes_.assign(bytes);
    return k;
  }

  bool empty() const { return bytes_.empty(); }
  std::string_view bytes() const { return bytes_; }
  std::string_view from() const { return split().first; }
  std::string_view id() const { return split().second; }

  bool operator==(const DedupeKey&) const = default;

 private:
  static bool read_len(std::string_view b, size_t& at, uint64_t& n) {
    n = 0;
    for (int shift = 0; shift < 64 && at < b.size(); shift += 7) {
      auto c = static_cast<unsigned char>(b[at++]);
      n |= uint64_t(c & 0x7f) << shift;
      if (c < 0x80) return true;
    }
    return false;
  }
  std::pair<std::string_view, std::string_view> split() const {
    size_t at = 0;
    uint64_t n = 0;
    if (!read_len(bytes_, at, n)) return {};
    std::string_view rest = std::string_view(bytes_).substr(at);
    return {rest.substr(0, n), rest.substr(n)};
  }

  std::string bytes_;
};

}  // namespace parley::store
