// A `pub` hook's cost, as compare's parley-hook target reports it: the server's
// parley_hook_* counters (GET /metrics, read before the server stops) and the app
// server's CPU over the run (/proc/PID/stat of --app-pid).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bench {

struct HookFigures {
  bool present = false;  // a hook target whose /metrics was read
  std::string label;     // the metrics' hook label, tenant/namespace/pub
  double requests = 0, allowed = 0, modified = 0, denied = 0, timeouts = 0, failures = 0,
         failed_open = 0, backpressure = 0, answered = 0, latency_us_total = 0;
  double app_cpu_s = -1;  // -1: no --app-pid
  double mean_latency_us() const { return answered > 0 ? latency_us_total / answered : 0; }
};

// The parley_hook_* samples of a /metrics text whose hook label is `label`.
HookFigures parse_hook_metrics(std::string_view metrics, const std::string& label);

// Why a run whose every pub was meant to be allowed was not clean ("" when it was):
// each acked pub asked once and allowed, nothing timed out, failed or was refused.
std::string hook_problem(const HookFigures& h, uint64_t acked);

// GET http://127.0.0.1:port<path> (Connection: close); the body, or nothing when the
// request failed or was not answered 200.
std::optional<std::string> http_get_loopback(int port, const std::string& path);

}  // namespace bench
