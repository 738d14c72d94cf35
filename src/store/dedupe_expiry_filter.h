// DedupeExpiryFilter: drops dedupe records whose window has passed when RocksDB
// compacts them, so the dedupe keyspace does not grow forever.
//
// Threading: RocksDB calls Filter() from its compaction threads, possibly several at
// once; the filter is stateless apart from its clock, so it needs no lock.
#pragma once

#include <cstdint>
#include <string>

#include <rocksdb/compaction_filter.h>

namespace parley::store {

class DedupeExpiryFilter final : public rocksdb::CompactionFilter {
 public:
  using Clock = int64_t (*)();
  // `now_ms` is wall time in ms; replaceable in tests.
  explicit DedupeExpiryFilter(Clock now_ms);

  // True (drop) for a dedupe record whose expiry is before now. Message records and
  // anything that does not parse are kept: losing data to a decoding bug is worse
  // than keeping a stale entry.
  bool Filter(int level, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* new_value, bool* value_changed) const override;
  const char* Name() const override { return "parley.DedupeExpiryFilter"; }

 private:
  Clock now_ms_;
};

}  // namespace parley::store
