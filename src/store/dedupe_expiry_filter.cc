#include "store/dedupe_expiry_filter.h"

#include <string_view>

#include "store/record_codec.h"

namespace parley::store {

DedupeExpiryFilter::DedupeExpiryFilter(Clock now_ms) : now_ms_(now_ms) {}

bool DedupeExpiryFilter::Filter(int, const rocksdb::Slice& key, const rocksdb::Slice& value,
                                std::string*, bool*) const {
  if (key.empty() || !is_dedupe_tag(key[0])) return false;
  DedupeValue v;
  if (!decode_dedupe_value(std::string_view(value.data(), value.size()), v)) return false;
  return v.expiry_ms < now_ms_();
}

}  // namespace parley::store
