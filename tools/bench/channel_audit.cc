#include "channel_audit.h"

#include <algorithm>

namespace bench {

namespace {
// A gap this wide means something else is wrong (wrong channel, reset server);
// listing every seq would only burn memory, so the excess is counted as lost.
constexpr uint64_t kMaxTrackedMissing = 100000;
}

Membership::Verdict Membership::receive(uint64_t seq) {
  if (seq == last_seq + 1) {
    last_seq = seq;
    return Verdict::kInOrder;
  }
  if (seq > last_seq) {
    for (uint64_t s = last_seq + 1; s < seq && missing.size() < kMaxTrackedMissing; ++s)
      missing.push_back(s);
    last_seq = seq;
    return Verdict::kGap;
  }
  auto it = std::find(missing.begin(), missing.end(), seq);
  if (it != missing.end()) {
    missing.erase(it);
    return Verdict::kReordered;
  }
  return Verdict::kDuplicate;
}

}  // namespace bench
