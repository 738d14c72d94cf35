#include "auth/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace parley::auth {
namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;
constexpr int64_t kNsPerMs = 1'000'000;
// Lets rounding in the refill arithmetic not cost a whole retry: a caller that
// waits the retry_ms it was given finds its token, at a one-in-a-million overrate.
constexpr double kTokenSlack = 1e-6;

int ceil_ms(int64_t ns) {
  int64_t ms = (ns + kNsPerMs - 1) / kNsPerMs;
  return static_cast<int>(std::clamp<int64_t>(ms, 1, kNsPerSec / kNsPerMs));
}

}  // namespace

TokenBucket::TokenBucket(uint32_t per_sec)
    : rate_per_ns_(double(per_sec) / double(kNsPerSec)),
      capacity_(per_sec),
      tokens_(per_sec) {}

int TokenBucket::take(int64_t now_ns) {
  if (capacity_ == 0) return 0;  // 0 per second means unlimited (tenant.h)
  // A clock read before the last one (another core's steady clock) must not
  // refill with negative time, nor move last_ns_ back and refill twice.
  if (now_ns > last_ns_) {
    tokens_ = std::min(capacity_, tokens_ + double(now_ns - last_ns_) * rate_per_ns_);
    last_ns_ = now_ns;
  }
  if (tokens_ + kTokenSlack >= 1.0) {
    tokens_ -= 1.0;
    return 0;
  }
  return ceil_ms(static_cast<int64_t>(std::ceil((1.0 - kTokenSlack - tokens_) / rate_per_ns_)));
}

SharedTokenBucket::SharedTokenBucket(uint32_t per_sec) { set_rate(per_sec); }

void SharedTokenBucket::set_rate(uint32_t per_sec) {
  const int64_t interval = per_sec == 0 ? 0 : kNsPerSec / per_sec;
  // per_sec intervals exactly, so the burst is per_sec despite the rounding.
  burst_ns_.store(interval * per_sec, std::memory_order_relaxed);
  interval_ns_.store(interval, std::memory_order_relaxed);
}

int SharedTokenBucket::take(int64_t now_ns) { return take(now_ns, 1); }

int SharedTokenBucket::take(int64_t now_ns, uint32_t n) {
  // 0 per second is unlimited; above 1e9/s the interval rounds to 0 and the
  // bucket is unlimited too, which no real publisher reaches.
  const int64_t interval_ns = interval_ns_.load(std::memory_order_relaxed);
  if (interval_ns == 0) return 0;
  const int64_t burst_ns = burst_ns_.load(std::memory_order_relaxed);
  // Relaxed: the word guards no other memory, only its own value matters, and
  // the CAS makes every successful take advance it exactly once.
  int64_t full_at = full_at_ns_.load(std::memory_order_relaxed);
  for (;;) {
    int64_t next = std::max(full_at, now_ns) + interval_ns * int64_t{n};
    int64_t excess = next - now_ns - burst_ns;
    if (excess > 0) return ceil_ms(excess);
    if (full_at_ns_.compare_exchange_weak(full_at, next, std::memory_order_relaxed)) return 0;
  }
}

}  // namespace parley::auth
