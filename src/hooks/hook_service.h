// The synchronous hooks (PROTOCOL.md "Hooks"): the session::HookGate the
// server wires into the gateway.
//
// ask() runs on the asking session's loop, on that loop's HookPool for the
// hook (made at its first use, and made again when a reload changed its URL),
// and completes there: no loop ever waits on the app server, and nothing of a
// hook crosses loops but its counters. A hook is one (tenant, namespace,
// kind); its limits (max_inflight, queue) hold per loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hooks/hook_pool.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "session/hook_gate.h"

namespace parley::hooks {

// One hook's counters (parley_hook_* of metrics/metric_list.h). Any thread.
struct HookStats {
  std::atomic<uint64_t> requests{0};      // sent to the app server
  std::atomic<uint64_t> allowed{0};       // answered allow, body unchanged
  std::atomic<uint64_t> modified{0};      // answered allow with a new body
  std::atomic<uint64_t> denied{0};        // answered deny
  std::atomic<uint64_t> timeouts{0};      // no answer by the deadline
  std::atomic<uint64_t> failures{0};      // app server down, non-2xx, or a bad answer
  std::atomic<uint64_t> failed_open{0};   // timeouts and failures allowed by hook_*_fail = "open"
  std::atomic<uint64_t> backpressure{0};  // refused: in flight and queue full
  std::atomic<uint64_t> latency_us{0};    // sum over answered requests, from the ask
  std::atomic<uint64_t> answered{0};
  std::atomic<int64_t> inflight{0};       // asked and not yet decided, every loop
  std::atomic<int64_t> warned_ms{0};      // last warning in the log (one per 10 s)
  PoolStats pool;                         // connections, late answers: the pools' own
};

class HookService final : public session::HookGate {
 public:
  using Tenants = std::map<std::string, TenantConfig, std::less<>>;
  // Every hook of `tenants` is listed in the metrics from the start (at 0);
  // one a reload adds, from its first ask.
  HookService(runtime::LoopGroup& loops, const Tenants& tenants);
  ~HookService() override;

  void ask(unsigned loop, session::HookAsk ask, std::function<void(session::HookVerdict)> done) override;

  // Sources of the parley_hook_* rows (start-up).
  void register_metrics(metrics::Metrics& metrics);
  // Off-loop (the server's stopping thread): stops every pool on its loop.
  void stop();

 private:
  HookStats& stats_of(const std::string& name);
  void decide(HookStats& stats, const session::HookAsk& ask, int64_t asked_ns, CallResult r,
              const std::function<void(session::HookVerdict)>& done);

  runtime::LoopGroup& loops_;
  // Per loop: pools by hook name (tenant/namespace/kind); touched on loop i only.
  struct LoopPools {
    std::unordered_map<std::string, std::shared_ptr<HookPool>> pools;
    std::unordered_map<std::string, HookStats*> stats;  // this loop's cache of stats_
  };
  std::vector<LoopPools> per_loop_;
  // Every hook's counters, by name. The lock guards the map only: a loop
  // takes it at a hook's first use there, a scrape to list them.
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<HookStats>> stats_;
};

}  // namespace parley::hooks
