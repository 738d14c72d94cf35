#include "seqlog/sequenced_log.h"

#include <algorithm>

namespace parley::seqlog {

void refill_dedupe(store::DedupeTable& table, std::vector<store::DedupeEntry>& entries) {
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.ts_ms < b.ts_ms; });
  for (const auto& e : entries) table.insert(store::DedupeKey(e.from, e.id), e.seq, e.ts_ms);
}

}  // namespace parley::seqlog
