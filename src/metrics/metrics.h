// Metrics: per-thread counters and histograms, summed when /metrics is scraped.
//
// Each loop thread gets its own ThreadMetrics (Metrics::local()), so the hot
// path never shares a cache line with another core. Fields are relaxed atomics
// only so that a scrape from another thread reads them without a data race;
// off-loop threads (the store writer) share one extra slot.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error_code.h"

namespace parley::metrics {

// Latency histogram with fixed bucket bounds (seconds), Prometheus-style.
class Histogram {
 public:
  static constexpr std::array<double, 18> kBounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02,
      0.03,    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

  void observe_ns(int64_t ns);
  // Adds this histogram's counts into `into` (scrape side).
  void add_to(std::array<uint64_t, kBounds.size() + 1>& buckets, uint64_t& count,
              double& sum_s) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

enum class Stage { kAck, kDecode, kQueueWait, kAppend, kFanout, kWrite };
inline constexpr int kStageCount = 6;

struct ThreadMetrics {
  std::array<Histogram, kStageCount> stages;
  std::atomic<uint64_t> frames_in{0};
  std::atomic<uint64_t> frames_out{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> deliveries{0};        // msg/state/presence items handed to sessions
  std::atomic<uint64_t> slow_consumers{0};
  std::atomic<uint64_t> connections_opened{0};
  std::atomic<uint64_t> connections_refused{0};  // over the process connection limit
  std::atomic<int64_t> queued_bytes{0};       // bytes waiting in session write queues
  std::array<std::atomic<uint64_t>, kErrorCodeCount> rejections{};

  void observe(Stage s, int64_t ns) { stages[static_cast<int>(s)].observe_ns(ns); }
  void reject(ErrorCode c) { rejections[static_cast<int>(c)].fetch_add(1, std::memory_order_relaxed); }
  static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

class Metrics {
 public:
  explicit Metrics(unsigned loops);

  // The calling thread's slot: its loop's, or the shared off-loop slot.
  ThreadMetrics& local();
  // Loop i's slot, for objects that will only run on loop i.
  ThreadMetrics& slot(unsigned i) { return *slots_[i]; }

  // Extra lines computed at scrape time (gauges owned by other components).
  // Registered during start-up only.
  using Collector = std::function<void(std::string& out)>;
  void add_collector(Collector c) { collectors_.push_back(std::move(c)); }

  // The Prometheus text exposition of everything. Any thread.
  std::string render() const;

 private:
  std::vector<std::unique_ptr<ThreadMetrics>> slots_;  // one per loop + one shared
  std::vector<Collector> collectors_;
};

}  // namespace parley::metrics
