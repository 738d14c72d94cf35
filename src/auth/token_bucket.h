// Token buckets for publish rates: capacity = one second of the rate (the burst).
// A rate of 0 is unlimited: take() always answers 0 (see TenantConfig).
#pragma once

#include <atomic>
#include <cstdint>

namespace parley::auth {

// Owned by one thread (a session's loop): plain arithmetic.
class TokenBucket {
 public:
  explicit TokenBucket(uint32_t per_sec = 0);
  // Takes one token at steady time `now_ns`. Returns 0 when taken, else the
  // milliseconds until one is available (>= 1).
  int take(int64_t now_ns);

 private:
  double rate_per_ns_;
  double capacity_;
  double tokens_;
  int64_t last_ns_ = 0;
};

// Shared by every thread (a tenant-wide rate): lock-free, one CAS loop per take.
class SharedTokenBucket {
 public:
  explicit SharedTokenBucket(uint32_t per_sec);
  int take(int64_t now_ns);  // as TokenBucket::take
  // Takes n tokens at once or none (an emit of n events); n above the burst
  // never fits and answers the wait of a full bucket.
  int take(int64_t now_ns, uint32_t n);
  // A new rate (a config reload), any thread. Takes racing with it may use the
  // old interval with the new burst for one take: a one-token error, once.
  void set_rate(uint32_t per_sec);

 private:
  // The time at which the bucket would be full ("virtual scheduling" form of a
  // token bucket): a take advances it by one token's interval. One atomic word.
  std::atomic<int64_t> full_at_ns_{0};
  // Atomic only so that a reload can change them; read relaxed on every take.
  std::atomic<int64_t> interval_ns_;
  std::atomic<int64_t> burst_ns_;
};

}  // namespace parley::auth
