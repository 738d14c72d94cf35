// What the events scenario's two pipelines (Parley's topics, events.cc; Redis
// Streams, redis_streams.cc) measure the same way: each consumer group's audit,
// the load's seconds, the drain after it, and the figures the comparison prints.
//
// Thread: a GroupAudit is written by its group's consumer threads and read by
// the thread that drives the run, each under its mu; the functions run on the
// driving thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "events_ledger.h"
#include "histogram.h"
#include "options.h"

namespace bench {

// One consumer group: what it received, in what order, how late.
struct GroupAudit {
  std::mutex mu;
  OffsetSet got;
  uint64_t deliveries = 0, order_violations = 0;
  uint64_t commits = 0, stale = 0;  // Parley's groups: commits sent, refused as stale
  Histogram latency;
  double cpu_s = 0;
};
using GroupAudits = std::vector<std::unique_ptr<GroupAudit>>;

// One pipeline's figures, for the side-by-side lines.
struct PipelineFigures {
  std::string name;
  bool ran = false;
  std::string error;
  double load_s = 0;
  uint64_t sent = 0, acked = 0, errors = 0;
  uint64_t missing = 0, order_violations = 0, redelivered = 0;  // over all groups
  Histogram latency;            // emit -> a consumer's receive, all groups
  double server_cpu_s = 0;      // parley, or redis-server
  double worker_cpu_s = 0;      // consumer threads (the Redis pipeline's workers)
  double producer_cpu_s = 0;    // producer threads
  uint64_t server_peak_rss = 0;
};

// Sleeps through the load's --duration, a second at a time; each second reads
// the RSS of `pid` (0: none) and, with --progress, calls progress(seconds so
// far) for the first 10 s and every 10th after. The peak RSS seen.
uint64_t sample_load(const Options& o, int pid, const std::function<void(int)>& progress);

// Waits until every group received every acknowledged offset, at most --drain.
void wait_received(const Options& o, const OffsetSet& acked, const GroupAudits& groups);

// Each group's missing offsets (acknowledged, never received), its line
// (print(g, audit, missing)), and its figures added to f.
void add_groups(PipelineFigures& f, const OffsetSet& acked, const GroupAudits& groups,
                const std::function<void(size_t, const GroupAudit&, uint64_t)>& print);

}  // namespace bench
