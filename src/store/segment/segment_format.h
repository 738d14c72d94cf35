// Byte layout of the segment log's files (pure functions, no I/O).
//
// A partition is a folder of segments, each "<base offset, 20 digits>.log":
//   header  "PRLYSEG1" le64(base)                       16 bytes
//   record  le32(len) le32(crc) le64(offset) payload     16 + len bytes, back to back
// payload is the embedded store's message value (record_codec.h: format byte, ts,
// from, id, body): one encoding of a stored message, whichever engine holds it.
// crc is the CRC32C of le64(offset) and the payload, so a torn or altered record
// (a power loss mid-write, a flipped byte) fails its check and recovery cuts the
// segment's tail there. Offsets only grow within a partition (gaps are allowed: a
// start after an accepted loss jumps them).
//
// A sealed segment (full, no longer written) has "<base>.idx": its summary and its
// sparse index, so opening a partition reads one small file per sealed segment
// instead of scanning it:
//   "PRLYIDX1" le64(base) le64(last) le64(bytes) le64(max_ts) le32(records)
//   le32(flags) le32(n) n x (le64(offset) le32(pos)) le32(crc of all before)
// An index that does not check (or does not match its segment's size) is ignored
// and the segment scanned instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace parley::store::segment {

inline constexpr size_t kSegmentHeaderBytes = 16;
inline constexpr size_t kRecordHeaderBytes = 16;
// Far above any event the protocol accepts; a length beyond it is damage.
inline constexpr uint32_t kMaxRecordPayload = 64u << 20;

// One entry of a segment's sparse index: the record of `offset` starts at byte `pos`.
struct IndexEntry {
  uint64_t offset = 0;
  uint32_t pos = 0;
};

// What the log knows of one segment (also what its .idx file holds).
struct SegmentMeta {
  uint64_t base = 0;
  uint64_t last = 0;      // 0: no record yet
  uint64_t bytes = kSegmentHeaderBytes;  // valid length of the file
  int64_t max_ts = 0;     // newest record's ts_ms (dedupe recovery stops below the cutoff)
  uint32_t records = 0;
  bool has_ids = false;   // some record carries a dedupe id
  std::vector<IndexEntry> index;
};

std::string segment_file_name(uint64_t base);  // "<20 digits>.log"
std::string index_file_name(uint64_t base);    // "<20 digits>.idx"
// The base of a segment file name; false when `name` is not one.
bool parse_segment_file_name(std::string_view name, uint64_t& base);

void append_segment_header(std::string& out, uint64_t base);
bool parse_segment_header(std::string_view in, uint64_t& base);

// Appends the record of `msg` (its seq is the offset); `scratch` is reused.
void append_record(std::string& out, const StoredMessage& msg, std::string& scratch);

enum class Parse { kOk, kShort, kBad };
struct RecordView {
  uint64_t offset = 0;
  std::string_view payload;
  size_t size = 0;  // header + payload
};
// The record at the start of `in`: kShort when `in` ends inside it, kBad when its
// length is impossible or its checksum fails.
Parse parse_record(std::string_view in, RecordView& out);

void encode_index(const SegmentMeta& meta, std::string& out);
bool decode_index(std::string_view in, SegmentMeta& meta);

}  // namespace parley::store::segment
