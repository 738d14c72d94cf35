#include "backoff.h"

#include <algorithm>
#include <cmath>

namespace parley::detail {

int64_t backoff_delay(int attempt, int64_t min_ms, int64_t max_ms, double factor, double u) {
  const double grown = static_cast<double>(min_ms) * std::pow(factor, std::min(attempt, 30));
  const double cap = std::min(static_cast<double>(max_ms), grown);
  return static_cast<int64_t>(std::llround(cap / 2 + u * cap / 2));
}

int64_t with_jitter(int64_t ms, double fraction, double u) {
  return static_cast<int64_t>(std::llround(static_cast<double>(ms) * (1 + u * fraction)));
}

}  // namespace parley::detail
