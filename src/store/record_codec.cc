#include "store/record_codec.h"

#include <cassert>

namespace parley::store {
namespace {

constexpr char kMessageFormatV1 = 1;
// V1, then what moderation adds (store.h StoredMessage): kind byte,
// varint(target), fixed64(edited_ms), deleted byte. Written only for entries
// that carry any of it, so a plain message keeps V1 (and earlier builds read it).
constexpr char kMessageFormatV2 = 2;

void put_fixed64(std::string& out, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out.append(buf, 8);
}

uint64_t get_fixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) return true;
  }
  return false;
}

void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

bool get_string(std::string_view& in, std::string& s) {
  uint64_t n = 0;
  if (!get_varint(in, n) || n > in.size()) return false;
  s.assign(in.data(), n);
  in.remove_prefix(n);
  return true;
}

}  // namespace

void assign_channel_prefix(std::string& p, char tag, const ChannelKey& key) {
  assert(key.tenant.find('\0') == std::string::npos);
  assert(key.channel.find('\0') == std::string::npos);
  p.clear();
  p.reserve(key.tenant.size() + key.channel.size() + 3 + 8);
  p.push_back(tag);
  p.append(key.tenant);
  p.push_back('\0');
  p.append(key.channel);
  p.push_back('\0');
}

std::string channel_prefix(char tag, const ChannelKey& key) {
  std::string p;
  assign_channel_prefix(p, tag, key);
  return p;
}

std::string prefix_upper_bound(std::string_view prefix) {
  assert(!prefix.empty() && prefix.back() == '\0');
  std::string up(prefix);
  up.back() = '\1';
  return up;
}

void append_seq(std::string& key, uint64_t seq) {
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(seq >> (8 * i)));
}

bool parse_message_seq(std::string_view key, size_t prefix_len, uint64_t& seq) {
  if (key.size() != prefix_len + 8) return false;
  seq = 0;
  for (size_t i = prefix_len; i < key.size(); ++i) {
    seq = (seq << 8) | static_cast<unsigned char>(key[i]);
  }
  return true;
}

std::string dedupe_record_key(const ChannelKey& channel, uint64_t seq, const DedupeKey& key) {
  std::string k = channel_prefix(kDedupeTag, channel);
  append_seq(k, seq);
  k.append(key.bytes());
  return k;
}

void assign_dedupe_record_key(std::string& out, const ChannelKey& channel, uint64_t seq,
                              std::string_view from, std::string_view id) {
  assign_channel_prefix(out, kDedupeTag, channel);
  append_seq(out, seq);
  DedupeKey::append(out, from, id);
}

bool parse_dedupe_suffix(char tag, std::string_view suffix, std::string& from, std::string& id) {
  if (tag == kDedupeTag) {
    // be64(seq), then the DedupeKey (at least its length byte).
    if (suffix.size() < 9) return false;
    suffix.remove_prefix(8);
    tag = kIdDedupeTag;
  }
  if (tag == kIdDedupeTag) {
    auto key = DedupeKey::from_bytes(suffix);
    if (!key) return false;
    from.assign(key->from());
    id.assign(key->id());
    return true;
  }
  if (tag != kLegacyDedupeTag) return false;
  size_t nul = suffix.find('\0');
  if (nul == std::string_view::npos) return false;
  from.assign(suffix.substr(0, nul));
  id.assign(suffix.substr(nul + 1));
  return true;
}

void encode_message_value(const StoredMessage& msg, std::string& out) {
  out.clear();
  out.reserve(1 + 8 + 3 * 5 + msg.from.size() + msg.id.size() + msg.body.size());
  const bool moderated = msg.kind != EntryKind::kMsg || msg.edited_ms != 0 || msg.deleted;
  out.push_back(moderated ? kMessageFormatV2 : kMessageFormatV1);
  put_fixed64(out, static_cast<uint64_t>(msg.ts_ms));
  put_string(out, msg.from);
  put_string(out, msg.id);
  put_string(out, msg.body);
  if (!moderated) return;
  out.push_back(static_cast<char>(msg.kind));
  put_varint(out, msg.target);
  put_fixed64(out, static_cast<uint64_t>(msg.edited_ms));
  out.push_back(msg.deleted ? 1 : 0);
}

bool decode_message_value(std::string_view in, StoredMessage& msg) {
  if (in.size() < 9 || (in[0] != kMessageFormatV1 && in[0] != kMessageFormatV2)) return false;
  const bool v2 = in[0] == kMessageFormatV2;
  msg.ts_ms = static_cast<int64_t>(get_fixed64(in.data() + 1));
  in.remove_prefix(9);
  if (!get_string(in, msg.from) || !get_string(in, msg.id) || !get_string(in, msg.body)) return false;
  msg.kind = EntryKind::kMsg;
  msg.target = 0;
  msg.edited_ms = 0;
  msg.deleted = false;
  if (!v2) return in.empty();
  if (in.empty() || static_cast<unsigned char>(in[0]) > 2) return false;
  msg.kind = static_cast<EntryKind>(in[0]);
  in.remove_prefix(1);
  if (!get_varint(in, msg.target) || in.size() != 9 || static_cast<unsigned char>(in[8]) > 1) {
    return false;
  }
  msg.edited_ms = static_cast<int64_t>(get_fixed64(in.data()));
  msg.deleted = in[8] == 1;
  return true;
}

void encode_gap_value(uint64_t last_seq, std::string& out) {
  out.clear();
  put_fixed64(out, last_seq);
}

bool decode_gap_value(std::string_view value, uint64_t& last_seq) {
  if (value.size() != 8) return false;
  last_seq = get_fixed64(value.data());
  return true;
}

void encode_dedupe_value(const DedupeValue& v, std::string& out) {
  out.clear();
  put_fixed64(out, v.seq);
  put_fixed64(out, static_cast<uint64_t>(v.ts_ms));
  put_fixed64(out, static_cast<uint64_t>(v.expiry_ms));
}

bool decode_dedupe_value(std::string_view in, DedupeValue& v) {
  if (in.size() != 24) return false;
  v.seq = get_fixed64(in.data());
  v.ts_ms = static_cast<int64_t>(get_fixed64(in.data() + 8));
  v.expiry_ms = static_cast<int64_t>(get_fixed64(in.data() + 16));
  return true;
}

}  // namespace parley::store
