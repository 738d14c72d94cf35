#include "pipeline_audit.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "procstat.h"

namespace bench {

uint64_t sample_load(const Options& o, int pid, const std::function<void(int)>& progress) {
  uint64_t peak = 0;
  for (int s = 0; s < static_cast<int>(o.duration_s); ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (pid) peak = std::max(peak, read_proc(pid).rss);
    if (o.progress && (s < 10 || s % 10 == 9)) progress(s + 1);
  }
  return peak;
}

void wait_received(const Options& o, const OffsetSet& acked, const GroupAudits& groups) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration<double>(o.drain_s);
  auto complete = [&] {
    for (auto& g : groups) {
      std::lock_guard lock(g->mu);
      if (g->got.distinct() < acked.distinct()) return false;
    }
    return true;
  };
  while (!complete() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

void add_groups(PipelineFigures& f, const OffsetSet& acked, const GroupAudits& groups,
                const std::function<void(size_t, const GroupAudit&, uint64_t)>& print) {
  for (size_t g = 0; g < groups.size(); ++g) {
    auto& a = *groups[g];
    uint64_t missing = 0;
    acked.for_each([&](uint32_t p, uint64_t off) { missing += a.got.has(p, off) ? 0 : 1; });
    print(g, a, missing);
    f.missing += missing;
    f.order_violations += a.order_violations;
    f.redelivered += a.deliveries - a.got.distinct();
    f.latency.merge(a.latency);
    f.worker_cpu_s += a.cpu_s;
  }
}

}  // namespace bench
