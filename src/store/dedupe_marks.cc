// Store::recover_marks's default (store.h): recover(), then the entries' strings
// hashed into marks and freed. Stores that read ids one by one (the segment
// log, through EmbeddedStore) override it and never hold the strings.
#include <string>
#include <utility>

#include "store/dedupe_key.h"
#include "store/store.h"

namespace parley::store {

void Store::recover_marks(const ChannelKey& key, int64_t dedupe_cutoff_ms, KeyHashFn hash,
                          RecoverDone done) {
  recover(key, dedupe_cutoff_ms, [hash, done = std::move(done)](Result<ChannelRecovery> r) {
    if (r) {
      std::vector<DedupeEntry> entries;
      entries.swap(r->dedupe);
      r->marks.reserve(r->marks.size() + entries.size());
      std::string bytes;
      for (const DedupeEntry& e : entries) {
        bytes.clear();
        DedupeKey::append(bytes, e.from, e.id);
        r->marks.push_back(DedupeMark{hash(bytes), e.seq, e.ts_ms});
      }
    }
    done(std::move(r));
  });
}

}  // namespace parley::store
