#include "store/segment/segment_format.h"

#include <cstdio>
#include <cstring>

#include "store/record_codec.h"
#include "store/segment/crc32c.h"

namespace parley::store::segment {
namespace {

constexpr char kSegmentMagic[8] = {'P', 'R', 'L', 'Y', 'S', 'E', 'G', '1'};
constexpr char kIndexMagic[8] = {'P', 'R', 'L', 'Y', 'I', 'D', 'X', '1'};

void put32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 4);
}
void put64(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 8);
}
uint32_t get32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
uint64_t get64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::string numbered(uint64_t base, const char* ext) {
  char b[40];
  std::snprintf(b, sizeof b, "%020llu%s", static_cast<unsigned long long>(base), ext);
  return b;
}

}  // namespace

std::string segment_file_name(uint64_t base) { return numbered(base, ".log"); }
std::string index_file_name(uint64_t base) { return numbered(base, ".idx"); }

bool parse_segment_file_name(std::string_view name, uint64_t& base) {
  if (name.size() != 24 || name.substr(20) != ".log") return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    const char c = name[i];
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  base = v;
  return true;
}

void append_segment_header(std::string& out, uint64_t base) {
  out.append(kSegmentMagic, sizeof kSegmentMagic);
  put64(out, base);
}

bool parse_segment_header(std::string_view in, uint64_t& base) {
  if (in.size() < kSegmentHeaderBytes || std::memcmp(in.data(), kSegmentMagic, 8) != 0) return false;
  base = get64(in.data() + 8);
  return true;
}

void append_record(std::string& out, const StoredMessage& msg, std::string& scratch) {
  encode_message_value(msg, scratch);
  const size_t at = out.size();
  put32(out, static_cast<uint32_t>(scratch.size()));
  put32(out, 0);  // the checksum, once the bytes it covers are in place
  put64(out, msg.seq);
  out.append(scratch);
  const uint32_t crc = crc32c_extend(0, out.data() + at + 8, 8 + scratch.size());
  for (int i = 0; i < 4; ++i) out[at + 4 + static_cast<size_t>(i)] = static_cast<char>(crc >> (8 * i));
}

Parse parse_record(std::string_view in, RecordView& out) {
  if (in.size() < kRecordHeaderBytes) return Parse::kShort;
  const uint32_t len = get32(in.data());
  if (len > kMaxRecordPayload) return Parse::kBad;
  if (in.size() < kRecordHeaderBytes + len) return Parse::kShort;
  if (crc32c_extend(0, in.data() + 8, 8 + size_t{len}) != get32(in.data() + 4)) return Parse::kBad;
  out.offset = get64(in.data() + 8);
  out.payload = in.substr(kRecordHeaderBytes, len);
  out.size = kRecordHeaderBytes + len;
  return Parse::kOk;
}

void encode_index(const SegmentMeta& m, std::string& out) {
  out.clear();
  out.append(kIndexMagic, sizeof kIndexMagic);
  put64(out, m.base);
  put64(out, m.last);
  put64(out, m.bytes);
  put64(out, static_cast<uint64_t>(m.max_ts));
  put32(out, m.records);
  put32(out, m.has_ids ? 1u : 0u);
  put32(out, static_cast<uint32_t>(m.index.size()));
  for (const IndexEntry& e : m.index) {
    put64(out, e.offset);
    put32(out, e.pos);
  }
  put32(out, crc32c(out));
}

bool decode_index(std::string_view in, SegmentMeta& m) {
  constexpr size_t kFixed = 8 + 8 * 4 + 4 * 3;
  if (in.size() < kFixed + 4 || std::memcmp(in.data(), kIndexMagic, 8) != 0) return false;
  if (crc32c(in.substr(0, in.size() - 4)) != get32(in.data() + in.size() - 4)) return false;
  const char* p = in.data() + 8;
  m.base = get64(p);
  m.last = get64(p + 8);
  m.bytes = get64(p + 16);
  m.max_ts = static_cast<int64_t>(get64(p + 24));
  m.records = get32(p + 32);
  m.has_ids = (get32(p + 36) & 1u) != 0;
  const uint32_t n = get32(p + 40);
  if (in.size() != kFixed + size_t{n} * 12 + 4) return false;
  m.index.clear();
  m.index.reserve(n);
  p = in.data() + kFixed;
  for (uint32_t i = 0; i < n; ++i, p += 12) m.index.push_back(IndexEntry{get64(p), get32(p + 8)});
  return true;
}

}  // namespace parley::store::segment
