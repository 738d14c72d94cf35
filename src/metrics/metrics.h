// Metrics: per-thread counters and histograms, summed when /metrics is scraped.
// What exists is declared once, in metric_list.h.
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
#include "metrics/metric_list.h"
#include "metrics/namespace_traffic.h"

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

enum class Stage {
  kAck, kDecode, kQueueWait, kAppend, kFanout, kWrite,
  // Event streams: an emit's arrival to its events' store ack (per event), a
  // committed event to its frame being queued on a reader's connection, and a
  // leaderboard's recompute-and-push pass.
  kEventAppend, kEventDispatch, kLeaderboard,
};
inline constexpr int kStageCount = 9;

struct ThreadMetrics {
  std::array<Histogram, kStageCount> stages;
  Histogram upstream_request;  // kUpstreamRequestSeconds
  Histogram valkey_script;     // kValkeyScriptSeconds
#define PARLEY_COUNTER_FIELD(field, name, help) std::atomic<uint64_t> field{0};
#define PARLEY_GAUGE_FIELD(field, name, help) std::atomic<int64_t> field{0};
  PARLEY_THREAD_COUNTERS(PARLEY_COUNTER_FIELD)
  PARLEY_THREAD_GAUGES(PARLEY_GAUGE_FIELD)
#undef PARLEY_COUNTER_FIELD
#undef PARLEY_GAUGE_FIELD
  std::array<std::atomic<uint64_t>, kErrorCodeCount> rejections{};
  // The owning Metrics' table (nullptr for a slot made alone, as in tests).
  TrafficTable* traffic = nullptr;

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

  // The samples of a scraped metric (see PARLEY_SCRAPED), read at scrape time
  // on the scraping thread. Set during start-up only.
  struct Sample {
    std::string label_value;  // empty for an unlabelled metric
    int64_t value;
  };
  using Source = std::function<void(std::vector<Sample>& out)>;
  void set_source(Scraped id, Source s) { sources_[static_cast<size_t>(id)] = std::move(s); }

  // The Prometheus text exposition of everything. Any thread.
  std::string render() const;

  // Sums over every thread's slot, for the admin page (api/admin_api.h). Any thread.
  struct HistogramTotals {
    std::array<uint64_t, Histogram::kBounds.size() + 1> buckets{};  // not cumulative
    uint64_t count = 0;
    double sum_s = 0;
  };
  HistogramTotals histogram(Stage s) const;
  uint64_t total(std::atomic<uint64_t> ThreadMetrics::*counter) const;
  int64_t total(std::atomic<int64_t> ThreadMetrics::*gauge) const;
  uint64_t rejections(ErrorCode c) const;
  std::vector<Sample> sample(Scraped id) const;
  // Fan-out bytes and deliveries by namespace and encoding.
  const TrafficTable& traffic() const { return traffic_; }
  TrafficTable& traffic_table() { return traffic_; }

 private:
  TrafficTable traffic_;
  std::vector<std::unique_ptr<ThreadMetrics>> slots_;  // one per loop + one shared
  std::array<Source, kScrapedCount> sources_;
};

}  // namespace parley::metrics
