// Runs one load (one target, one scenario) in this process or, with --procs, in
// forked children whose per-second samples and final figures are merged here.
//
// Timeline, the same in every process (all read CLOCK_MONOTONIC from one t0):
//   [0, L0)            connect at an even pace over --ramp-up, then settle 1 s
//   [L0, L0+duration)  publish / state / churn at the scheduled rates
//   then               drain (acks and deliveries), history audit, close.
#pragma once

#include <string>
#include <vector>

#include "channel_audit.h"
#include "hook_figures.h"
#include "options.h"
#include "stats.h"

namespace bench {

struct StepResult {
  int step = 0;
  double rate = 0;      // the stepped figure: pub msgs/s, or state Hz per connection
  double t_start = 0, t_end = 0;
  double msgs_per_s = 0, deliveries_per_s = 0;
  double states_sent_per_s = 0, state_deliveries_per_s = 0;
  double ack_p99_ms = 0, delivery_p99_ms = 0, state_p99_ms = 0, accepted_pct = 100;
  // Mean CPU over the step, % of one core: which resource ran out first.
  double server_cpu_pct = -1, own_cpu_pct = -1;
  bool held = false;
  std::string why;  // what broke it
};

struct RunResult {
  Options o;
  std::string started_at;  // UTC, ISO 8601
  std::string machine;     // cpus, memory, load average when the run started
  double load_start_t = 0, load_end_t = 0;
  Counters counters;       // final totals
  Counters at_load_start, at_load_end;
  Latencies latencies;     // whole run
  AuditResult audit;
  std::vector<Sample> samples;
  double own_cpu_s = 0;
  double server_cpu_s = -1;       // during the load phase
  double server_cpu_total_s = -1; // whole run
  uint64_t server_peak_rss = 0;
  std::vector<StepResult> steps;
  int last_good_step = -1;
  bool generator_behind = false;
  bool server_gone = false;  // the --server-pid process was not there at the end
  std::string generator_note;
  HookFigures hook;        // compare's parley-hook target (read after the run)
  std::string hook_note;   // hook_problem(): why the hook run was not clean
  int exit_code = 0;

  // Figures derived for reports and compare.
  double load_seconds() const { return load_end_t - load_start_t; }
  double per_s(uint64_t Counters::*f) const {
    double d = load_seconds();
    return d > 0 ? double(at_load_end.*f - at_load_start.*f) / d : 0;
  }
  double accepted_pct() const {
    return counters.pub_attempted
               ? 100.0 * double(counters.acked) / double(counters.pub_attempted) : 100.0;
  }
  // What the wire costs (issue 25), over the load phase: bytes received by
  // the clients (WebSocket or length framing included) per delivery (msg and
  // state) and per avatar-second (connection x second), server CPU per delivery.
  struct WireCost {
    double bytes_per_delivery = 0, bytes_per_avatar_s = 0, server_cpu_us_per_delivery = -1;
    // --ideal: the ideal's bytes per avatar-second and what the viewers got per
    // ideal byte (delta_audit.h), 0 without it.
    double ideal_per_avatar_s = 0, over_ideal = 0;
  };
  WireCost wire_cost() const {
    WireCost w;
    const double bytes = double(at_load_end.bytes_in - at_load_start.bytes_in);
    const double d = double(all_deliveries_in_load());
    if (d > 0) w.bytes_per_delivery = bytes / d;
    if (load_seconds() > 0) w.bytes_per_avatar_s = bytes / (double(o.conns) * load_seconds());
    if (d > 0 && server_cpu_s >= 0) w.server_cpu_us_per_delivery = server_cpu_s * 1e6 / d;
    const double ideal = double(at_load_end.ideal_bytes - at_load_start.ideal_bytes);
    if (ideal > 0) {
      w.over_ideal = bytes / ideal;
      if (load_seconds() > 0) w.ideal_per_avatar_s = ideal / (double(o.conns) * load_seconds());
    }
    return w;
  }
  uint64_t all_deliveries_in_load() const {
    return (at_load_end.deliveries - at_load_start.deliveries) +
           (at_load_end.state_deliveries - at_load_start.state_deliveries);
  }
  // The bench's own CPU seconds during the load phase (connects and drain excluded).
  double own_cpu_in_load() const {
    double a = 0, b = 0;
    for (const Sample& s : samples) {
      if (s.t <= load_start_t + 1e-9) a = s.own_cpu_s;
      if (s.t <= load_end_t + 1e-9) b = s.own_cpu_s;
    }
    return b - a;
  }
  bool audit_failed() const {
    return counters.lost || counters.duplicates || counters.reorders || counters.mismatches ||
           counters.history_missing || counters.history_mismatch || counters.delta_errors;
  }
};

RunResult run(const Options& o);

}  // namespace bench
