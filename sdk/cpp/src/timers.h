// One-shot timers run by Client::poll(): the client's only source of time
// driven work (backoff, retries, timeouts, liveness). Deferring a callback to
// the next poll() is a timer due now, which keeps every application callback
// out of the API call that caused it.
//
// Thread: the client's poll() thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

namespace parley::detail {

using TimerId = uint64_t;

class Timers {
 public:
  TimerId add(int64_t due_ms, std::function<void()> fn);
  /// Idempotent; 0 is never a timer.
  void cancel(TimerId id);
  /// Runs the timers due at `now_ms` that existed when it was called (one
  /// added by a callback waits for the next run). Returns how many ran.
  int run_due(int64_t now_ms);
  /// Due time of the earliest timer, or -1 when there is none.
  int64_t next_due() const;
  void clear();

 private:
  std::map<std::pair<int64_t, TimerId>, std::function<void()>> queue_;
  std::unordered_map<TimerId, int64_t> due_of_;
  TimerId next_id_ = 1;
};

}  // namespace parley::detail
