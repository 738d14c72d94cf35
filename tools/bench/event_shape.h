// The events both pipelines of the events scenario carry (events.h,
// redis_streams.h): one shape, one key sequence, one partition function, so
// that Parley's run and the Redis Streams run are the same load.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fnv1a.h"  // src/common: PROTOCOL.md's hash, header-only

namespace bench {

inline int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU seconds of the calling thread.
inline double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// Producer `index`'s event n: its key (player number) and points.
inline uint32_t event_key(uint64_t n, int index, int keys) {
  return static_cast<uint32_t>((n * 7919 + static_cast<uint64_t>(index) * 104729) %
                               static_cast<uint64_t>(keys));
}
inline int event_points(uint64_t n) { return static_cast<int>(n % 10); }

// The body: what the leaderboard reads (player, points, round) and the send
// time `t` (steady clock, ns) the consumers measure latency from.
inline void append_body(std::string& out, uint32_t k, int points, std::string_view round, int64_t t) {
  fmt::format_to(std::back_inserter(out), R"({{"player":"player-{}","points":{},"round":"{}","t":{}}})", k,
                 points, round, t);
}

// PROTOCOL.md's partition of a key: fnv1a_64(key) mod partitions.
inline uint32_t partition_of(std::string_view key, uint32_t partitions) {
  return static_cast<uint32_t>(parley::fnv1a_64(key) % partitions);
}

}  // namespace bench
