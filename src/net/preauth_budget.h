// What connections that have not authenticated yet may hold in read buffers,
// process-wide (issue 11, finding 5). Before `hello`, each connection's frame
// limit is small (server.preauth_frame_bytes), but thousands of sockets each
// holding the start of a frame still add up: their total is charged here, and
// a connection whose new bytes would pass the limit is refused.
//
// Any thread: one atomic counter. Connections charge and release from their
// own loop; the metrics scrape reads it.
#pragma once

#include <atomic>
#include <cstdint>

namespace parley::net {

class PreauthBudget {
 public:
  // The process's budget (one server per process).
  static PreauthBudget& process();

  void set_limit(uint64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t held() const {
    const int64_t h = held_.load(std::memory_order_relaxed);
    return h > 0 ? static_cast<uint64_t>(h) : 0;
  }

  // Charges `delta` bytes (negative releases). False when a positive charge
  // took the total past the limit: the bytes stay charged until released.
  bool charge(int64_t delta) {
    const int64_t now = held_.fetch_add(delta, std::memory_order_relaxed) + delta;
    return delta <= 0 || now <= static_cast<int64_t>(limit());
  }

 private:
  std::atomic<int64_t> held_{0};
  std::atomic<uint64_t> limit_{64ull << 20};
};

}  // namespace parley::net
