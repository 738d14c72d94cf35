// CRC32C (Castagnoli), the checksum of each segment-log record and index file.
//
// The same polynomial RocksDB and ext4 use for their blocks. Debian ships no C
// library for it (RocksDB's own is internal, not in its headers), and the SSE4.2
// instruction computes it at several GB/s: crc32c.cc uses the instruction when the
// CPU has it and a table otherwise (checked once). Any thread; pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace parley::store::segment {

// The CRC32C of `data` continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
inline uint32_t crc32c(std::string_view s) { return crc32c_extend(0, s.data(), s.size()); }

}  // namespace parley::store::segment
