// Counters and per-second samples. Each worker owns one Counters and its histograms;
// the runner merges copies (per second for progress and charts, once at the end).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "histogram.h"

namespace bench {

// Every field is a plain u64 so that sum, difference and (de)serialisation are one
// macro list. Names are those printed in JSON.
#define BENCH_COUNTERS(X)                                                          \
  X(conn_attempts) X(conn_ready) X(conn_failed) X(disconnects) X(reconnects)      \
  X(reconnect_failed) X(unrecovered_joins) X(byes)                                \
  X(pub_attempted) X(pub_sent) X(acked) X(dup_acks) X(rate_limited)               \
  X(backpressure) X(unavailable) X(gave_up) X(unacked_at_end) X(pub_blocked) X(pub_errors)       \
  X(other_errors) X(deliveries) X(state_sent) X(state_deliveries)                 \
  X(presence_frames) X(pongs) X(frames_in) X(bytes_in) X(bytes_out)               \
  X(bad_frames) X(stray_msgs) X(joins) X(leaves) X(lost) X(duplicates)            \
  X(reorders) X(mismatches) X(history_checked) X(history_missing)                 \
  X(history_mismatch) X(sched_skipped) X(gaps) X(up_sent)                        \
  X(sd_deliveries) X(delta_errors) X(ideal_bytes) X(placements)

struct Counters {
#define BENCH_FIELD(name) uint64_t name = 0;
  BENCH_COUNTERS(BENCH_FIELD)
#undef BENCH_FIELD

  Counters& operator+=(const Counters& o) {
#define BENCH_ADD(name) name += o.name;
    BENCH_COUNTERS(BENCH_ADD)
#undef BENCH_ADD
    return *this;
  }
  Counters operator-(const Counters& o) const {
    Counters r;
#define BENCH_SUB(name) r.name = name - o.name;
    BENCH_COUNTERS(BENCH_SUB)
#undef BENCH_SUB
    return r;
  }
  // Open connections right now (not a rate).
  uint64_t held() const { return conn_ready - disconnects + reconnects; }
};

// The latency histograms a worker keeps, both for the whole run and per interval.
struct Latencies {
  Histogram ack;       // pub sent -> ack received (first send, so retries count)
  Histogram delivery;  // pub sent -> msg received, every member
  Histogram state;     // state sent -> state received (world)
  Histogram send_lag;  // scheduled send time -> actual send time (generator health)
  // Tick precision (issue 29): per connection, the time between two successive
  // reads that brought `state` frames (one tick's frames arrive in one read), and
  // that interval's distance from the nearest whole number of ticks (--tick-ms).
  Histogram tick_interval;
  Histogram tick_dev;
  void merge(const Latencies& o) {
    ack.merge(o.ack);
    delivery.merge(o.delivery);
    state.merge(o.state);
    send_lag.merge(o.send_lag);
    tick_interval.merge(o.tick_interval);
    tick_dev.merge(o.tick_dev);
  }
  void reset() {
    ack.reset();
    delivery.reset();
    state.reset();
    send_lag.reset();
    tick_interval.reset();
    tick_dev.reset();
  }
};

// One second of a run, merged over workers (and processes).
struct Sample {
  double t = 0;        // seconds since the load started
  Counters total;      // cumulative at t
  Latencies interval;  // latencies recorded during (t-1, t]
  double rate = 0;     // scheduled pub rate (msgs/s) at t
  double own_cpu_s = 0;     // load generator CPU seconds, cumulative
  double server_cpu_s = -1; // cumulative, -1 when no --server-pid
  uint64_t server_rss = 0;  // bytes
};

}  // namespace bench
