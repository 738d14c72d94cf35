#include "report.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace bench {

namespace {

// "87%", or "-" when not measured (no --server-pid).
std::string cpu_pct(double pct) { return pct < 0 ? "-" : fmt::format("{:.0f}%", pct); }
double ms(uint64_t ns) { return double(ns) / 1e6; }

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", int(c));
      continue;
    }
    out += c;
  }
  return out;
}

std::string hist_json(const Histogram& h) {
  return fmt::format(
      R"({{"count":{},"mean":{:.3f},"p50":{:.3f},"p95":{:.3f},"p99":{:.3f},"p999":{:.3f},"max":{:.3f}}})",
      h.count(), h.mean() / 1e6, ms(h.percentile(50)), ms(h.percentile(95)),
      ms(h.percentile(99)), ms(h.percentile(99.9)), ms(h.max()));
}

std::string hist_row(const char* name, const Histogram& h) {
  if (h.count() == 0) return fmt::format("  {:<18} (none)\n", name);
  return fmt::format("  {:<18} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}   n={}\n", name,
                     ms(h.percentile(50)), ms(h.percentile(95)), ms(h.percentile(99)),
                     ms(h.percentile(99.9)), ms(h.max()), h.count());
}
}  // namespace

std::vector<TimelinePoint> timeline(const RunResult& r) {
  std::vector<TimelinePoint> out;
  const Sample* prev = nullptr;
  for (const Sample& s : r.samples) {
    double dt = prev ? s.t - prev->t : s.t;
    if (dt <= 0.05) {
      prev = &s;
      continue;
    }
    Counters d = prev ? s.total - prev->total : s.total;
    TimelinePoint p;
    p.t = s.t;
    p.rate = s.rate;
    p.held = double(s.total.held());
    p.acks_per_s = double(d.acked) / dt;
    p.deliveries_per_s = double(d.deliveries) / dt;
    p.states_per_s = double(d.state_deliveries) / dt;
    p.bytes_in_per_s = double(d.bytes_in) / dt;
    p.bytes_out_per_s = double(d.bytes_out) / dt;
    p.rejected_per_s = double(d.rate_limited + d.backpressure + d.unavailable) / dt;
    p.ack_p50_ms = ms(s.interval.ack.percentile(50));
    p.ack_p99_ms = ms(s.interval.ack.percentile(99));
    p.delivery_p50_ms = ms(s.interval.delivery.percentile(50));
    p.delivery_p99_ms = ms(s.interval.delivery.percentile(99));
    p.state_p99_ms = ms(s.interval.state.percentile(99));
    p.own_cpu_pct = prev ? 100 * (s.own_cpu_s - prev->own_cpu_s) / dt : 0;
    if (prev && s.server_cpu_s >= 0 && prev->server_cpu_s >= 0)
      p.server_cpu_pct = 100 * (s.server_cpu_s - prev->server_cpu_s) / dt;
    if (s.server_cpu_s >= 0) p.server_rss_mib = double(s.server_rss) / 1048576.0;
    out.push_back(p);
    prev = &s;
  }
  return out;
}

void print_table(const RunResult& r) {
  const Counters& c = r.counters;
  std::string t;
#define line(...) t += fmt::format(__VA_ARGS__)
  line("\nparley-bench {} ({}) against {} {}:{} over {}, {} s load, started {}\n",
       r.o.scenario, r.o.preset.empty() ? "custom" : r.o.preset, r.o.target_name, r.o.host,
       r.o.port, r.o.transport, r.load_seconds(), r.started_at);
  line("  machine: {}\n", r.machine);
  line("  connections {} in {} channels of {}, {} thread(s) x {} process(es)\n", r.o.conns,
       (r.o.conns + r.o.channel_size - 1) / r.o.channel_size, r.o.channel_size, r.o.threads,
       r.o.procs);
  line("\n  latency (ms)            p50       p95       p99     p99.9       max\n");
  t += hist_row("ack", r.latencies.ack);
  t += hist_row("delivery", r.latencies.delivery);
  if (r.latencies.state.count()) t += hist_row("state delivery", r.latencies.state);
  t += hist_row("send lag (own)", r.latencies.send_lag);
  if (r.latencies.tick_interval.count()) {
    t += hist_row("tick interval", r.latencies.tick_interval);
    t += hist_row("tick deviation", r.latencies.tick_dev);
  }
  line("\n  throughput (load phase)\n");
  line("  {:<26}{:>14.1f}\n", "msgs acked/s", r.per_s(&Counters::acked));
  line("  {:<26}{:>14.1f}\n", "deliveries/s", r.per_s(&Counters::deliveries));
  if (c.state_deliveries)
    line("  {:<26}{:>14.1f}  (sent {:.1f}/s)\n", "state deliveries/s",
         r.per_s(&Counters::state_deliveries), r.per_s(&Counters::state_sent));
  if (c.up_sent) line("  {:<26}{:>14.1f}\n", "up sent/s", r.per_s(&Counters::up_sent));
  line("  {:<26}{:>14.1f}\n", "bytes in/s", r.per_s(&Counters::bytes_in));
  line("  {:<26}{:>14.1f}\n", "bytes out/s", r.per_s(&Counters::bytes_out));
  const auto wire = r.wire_cost();
  line("  {:<26}{:>14.1f}  ({}{}; per avatar-second {:.0f} B; state deltas {} of {} states)\n",
       "bytes in per delivery", wire.bytes_per_delivery, r.o.encoding, r.o.batched_deltas ? " + batched deltas" : r.o.deltas ? " + deltas" : "",
       wire.bytes_per_avatar_s, c.sd_deliveries, c.state_deliveries);
  if (wire.over_ideal > 0)
    line("  {:<26}{:>14.2f}  (ideal {:.0f} B per avatar-second: the changed fields of the streams each viewer got; {} placements)\n",
         "bytes in / ideal", wire.over_ideal, wire.ideal_per_avatar_s, c.placements);
  line("  {:<26}{:>13.3f}%  ({} of {}; {} rate_limited, {} backpressure, {} unavailable, {} gave up, {} unacked)\n",
       "accepted", r.accepted_pct(), c.acked, c.pub_attempted, c.rate_limited, c.backpressure,
       c.unavailable, c.gave_up, c.unacked_at_end);
  line("  {:<26}{:>14}  (ready {}, failed {}, disconnects {}, reconnects {}, failed reconnects {})\n",
       "connections held at end", r.at_load_end.held(), c.conn_ready, c.conn_failed,
       c.disconnects, c.reconnects, c.reconnect_failed);
  line("  {:<26}{:>14.2f}", "load generator CPU s", r.own_cpu_s);
  uint64_t load_frames = r.at_load_end.frames_in - r.at_load_start.frames_in;
  if (load_frames)
    line("  (load phase {:.2f} s, {:.2f} us per frame received)", r.own_cpu_in_load(),
         r.own_cpu_in_load() * 1e6 / double(load_frames));
  line("\n");
  if (r.server_cpu_s >= 0) {
    line("  {:<26}{:>14.2f}  (whole run {:.2f})\n", "server CPU s (load)", r.server_cpu_s,
         r.server_cpu_total_s);
    line("  {:<26}{:>14.1f}\n", "server peak RSS MiB", double(r.server_peak_rss) / 1048576.0);
    if (r.server_cpu_s > 0)
      line("  {:<26}{:>14.0f}  ({:.3f} us of server CPU per delivery)\n", "deliveries/server CPU-s",
           double(r.all_deliveries_in_load()) / r.server_cpu_s, wire.server_cpu_us_per_delivery);
  }
  if (!r.steps.empty() && r.o.ramp_of == "state") {
    line("\n  ramp steps       state Hz  states/s  state deliv/s  state p99  deliv p99  accepted"
         "  srv cpu  gen cpu\n");
    for (auto& s : r.steps)
      line("  {:>3} {:<6} {:>9.2f} {:>9.0f} {:>14.0f} {:>10.1f} {:>10.1f} {:>9.3f}% {:>7} {:>8}  {}\n",
           s.step, s.held ? "held" : "BROKE", s.rate, s.states_sent_per_s,
           s.state_deliveries_per_s, s.state_p99_ms, s.delivery_p99_ms, s.accepted_pct,
           cpu_pct(s.server_cpu_pct), cpu_pct(s.own_cpu_pct), s.why);
    if (r.last_good_step >= 0) {
      const StepResult& g = r.steps[size_t(r.last_good_step)];
      line("  last step that held: {} at {:.2f} Hz per connection ({:.0f} states/s sent, {:.0f} "
           "state deliveries/s)\n",
           g.step, g.rate, g.states_sent_per_s, g.state_deliveries_per_s);
    } else {
      line("  no step held\n");
    }
  } else if (!r.steps.empty()) {
    line("\n  ramp steps           rate   acked/s  deliv/s  ack p99  deliv p99  accepted"
         "  srv cpu  gen cpu\n");
    for (auto& s : r.steps)
      line("  {:>3} {:<6} {:>11.0f} {:>9.0f} {:>8.0f} {:>8.1f} {:>10.1f} {:>9.3f}% {:>7} {:>8}  {}\n",
           s.step, s.held ? "held" : "BROKE", s.rate, s.msgs_per_s, s.deliveries_per_s,
           s.ack_p99_ms, s.delivery_p99_ms, s.accepted_pct, cpu_pct(s.server_cpu_pct),
           cpu_pct(s.own_cpu_pct), s.why);
    if (r.last_good_step >= 0)
      line("  last step that held: {} at {:.0f} msgs/s\n", r.steps[size_t(r.last_good_step)].step,
           r.steps[size_t(r.last_good_step)].rate);
    else
      line("  no step held\n");
  }
  if (c.delta_errors) line("  audit: {} state deltas could not be applied or rebuilt a wrong body\n", c.delta_errors);
  line("\n  audit: lost {}  duplicates {}  reorders {}  mismatches {}  history missing {}  "
       "history mismatch {}\n",
       c.lost, c.duplicates, c.reorders, c.mismatches, c.history_missing, c.history_mismatch);
  line("         {} acked msgs in {} channels, {} members checked to the end, {} expected "
       "deliveries, {} found in history\n",
       r.audit.acked_msgs, r.audit.channels_checked, r.audit.members_checked,
       r.audit.expected_deliveries, c.history_checked);
  if (c.stray_msgs || c.bad_frames || c.other_errors || c.pub_errors)
    line("  other: {} stray msgs, {} bad frames, {} pub errors, {} other errors\n", c.stray_msgs,
         c.bad_frames, c.pub_errors, c.other_errors);
  if (r.hook.present) {
    const HookFigures& h = r.hook;
    line("\n  pub hook {}: {} requests, {} allowed, {} modified, {} denied, {} timeouts, {} failures, "
         "{} backpressure; mean {:.0f} us from the op's turn to the answer\n",
         h.label, h.requests, h.allowed, h.modified, h.denied, h.timeouts, h.failures,
         h.backpressure, h.mean_latency_us());
    if (h.app_cpu_s >= 0)
      line("  {:<26}{:>14.2f}  ({:.1f} us per hook request)\n", "app server CPU s (run)",
           h.app_cpu_s, h.requests > 0 ? h.app_cpu_s * 1e6 / h.requests : 0.0);
  }
  if (!r.hook_note.empty()) line("  hook: NOT CLEAN ({})\n", r.hook_note);
  if (r.generator_behind) line("  WARNING: load generator fell behind ({})\n", r.generator_note);
  line("  verdict: {}\n", r.exit_code == 0   ? "PASS"
                          : r.exit_code == 1 ? "FAIL (audit)"
                          : r.exit_code == 4 ? "FAIL (the server process exited during the run)"
                                             : "FAIL (no connection or nothing acknowledged)");
  fmt::print("{}", t);
#undef line
}

std::string to_json(const RunResult& r) {
  const Counters& c = r.counters;
  std::string j = "{\n";
#define kv(...) j += fmt::format(__VA_ARGS__)
  kv(R"(  "tool": "parley-bench", "format": 1,)" "\n");
  kv(R"(  "target": "{}", "scenario": "{}", "preset": "{}", "started_at": "{}", "run_id": "{}",)"
     "\n",
     esc(r.o.target_name), esc(r.o.scenario), esc(r.o.preset), r.started_at, esc(r.o.run_id));
  kv(R"(  "command": "{}", "server_cmd": "{}", "machine": "{}",)" "\n", esc(r.o.command_line),
     esc(r.o.server_cmd), esc(r.machine));
  kv(R"(  "options": {{"host": "{}", "port": {}, "transport": "{}", "conns": {}, "channel_size": {}, "ns": "{}", "rate": {}, "body_bytes": {}, "state_hz": {}, "churn_per_s": {}, "duration_s": {}, "ramp_s": {}, "threads": {}, "procs": {}, "src_addrs": {}, "history_check": {}, "ramp_of": "{}", "step_s": {}, "step_factor": {}, "max_p99_ms": {}}},)"
     "\n",
     esc(r.o.host), r.o.port, r.o.transport, r.o.conns, r.o.channel_size, esc(r.o.ns), r.o.rate,
     r.o.body_bytes, r.o.state_hz, r.o.churn_per_s, r.o.duration_s, r.o.ramp_s, r.o.threads,
     r.o.procs, r.o.src_addrs, r.o.history_check, esc(r.o.ramp_of), r.o.step_s, r.o.step_factor,
     r.o.max_p99_ms);
  kv(R"(  "latency_ms": {{"ack": {}, "delivery": {}, "state": {}, "send_lag": {}, "tick_interval": {}, "tick_dev": {}, "tick_ms": {}}},)" "\n",
     hist_json(r.latencies.ack), hist_json(r.latencies.delivery), hist_json(r.latencies.state),
     hist_json(r.latencies.send_lag), hist_json(r.latencies.tick_interval),
     hist_json(r.latencies.tick_dev), r.o.tick_ms);
  double dpc = r.server_cpu_s > 0 ? double(r.all_deliveries_in_load()) / r.server_cpu_s : 0;
  kv(R"(  "figures": {{"load_seconds": {}, "accepted_pct": {:.4f}, "msgs_per_s": {:.2f}, "deliveries_per_s": {:.2f}, "state_deliveries_per_s": {:.2f}, "bytes_in_per_s": {:.0f}, "bytes_out_per_s": {:.0f}, "conns_held": {}, "own_cpu_s": {:.3f}, "own_cpu_load_s": {:.3f}, "server_cpu_s": {:.3f}, "server_cpu_total_s": {:.3f}, "server_peak_rss_bytes": {}, "deliveries_per_server_cpu_s": {:.1f}}},)"
     "\n",
     r.load_seconds(), r.accepted_pct(), r.per_s(&Counters::acked), r.per_s(&Counters::deliveries),
     r.per_s(&Counters::state_deliveries), r.per_s(&Counters::bytes_in),
     r.per_s(&Counters::bytes_out), r.at_load_end.held(), r.own_cpu_s, r.own_cpu_in_load(), r.server_cpu_s,
     r.server_cpu_total_s, r.server_peak_rss, dpc);
  const auto wire = r.wire_cost();
  kv(R"(  "wire": {{"encoding": "{}", "deltas": {}, "batched_deltas": {}, "bytes_per_delivery": {:.2f}, "bytes_per_avatar_s": {:.1f}, "server_cpu_us_per_delivery": {:.4f}, "sd_deliveries": {}, "delta_errors": {}, "ideal_per_avatar_s": {:.1f}, "over_ideal": {:.3f}, "own_cpu_load_us_per_delivery": {:.4f}}},)"
     "\n",
     r.o.encoding, r.o.deltas, r.o.batched_deltas, wire.bytes_per_delivery, wire.bytes_per_avatar_s,
     wire.server_cpu_us_per_delivery, c.sd_deliveries, c.delta_errors, wire.ideal_per_avatar_s,
     wire.over_ideal,
     r.all_deliveries_in_load() ? r.own_cpu_in_load() * 1e6 / double(r.all_deliveries_in_load()) : 0.0);
  kv(R"(  "audit": {{"passed": {}, "lost": {}, "duplicates": {}, "reorders": {}, "mismatches": {}, "history_checked": {}, "history_missing": {}, "history_mismatch": {}, "acked_msgs": {}, "channels_checked": {}, "members_checked": {}, "expected_deliveries": {}}},)"
     "\n",
     !r.audit_failed(), c.lost, c.duplicates, c.reorders, c.mismatches, c.history_checked,
     c.history_missing, c.history_mismatch, r.audit.acked_msgs, r.audit.channels_checked,
     r.audit.members_checked, r.audit.expected_deliveries);
  if (r.hook.present || !r.hook_note.empty()) {
    const HookFigures& h = r.hook;
    kv(R"(  "hook": {{"label": "{}", "requests": {}, "allowed": {}, "modified": {}, "denied": {}, "timeouts": {}, "failures": {}, "failed_open": {}, "backpressure": {}, "answered": {}, "mean_latency_us": {:.1f}, "app_cpu_s": {:.3f}, "problem": "{}"}},)"
       "\n",
       esc(h.label), h.requests, h.allowed, h.modified, h.denied, h.timeouts, h.failures,
       h.failed_open, h.backpressure, h.answered, h.mean_latency_us(), h.app_cpu_s,
       esc(r.hook_note));
  }
  kv(R"(  "server_gone": {},)" "\n", r.server_gone);
  kv(R"(  "generator": {{"behind": {}, "note": "{}"}},)" "\n", r.generator_behind,
     esc(r.generator_note));
  j += "  \"counters\": {";
  bool first = true;
#define BENCH_JSON(name)                                          \
  j += fmt::format("{}\"{}\": {}", first ? "" : ", ", #name, c.name); \
  first = false;
  BENCH_COUNTERS(BENCH_JSON)
#undef BENCH_JSON
  j += "},\n  \"steps\": [";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const StepResult& s = r.steps[i];
    kv(R"({}{{"step": {}, "rate": {:.2f}, "held": {}, "msgs_per_s": {:.1f}, "deliveries_per_s": {:.1f}, "states_sent_per_s": {:.1f}, "state_deliveries_per_s": {:.1f}, "ack_p99_ms": {:.3f}, "delivery_p99_ms": {:.3f}, "state_p99_ms": {:.3f}, "accepted_pct": {:.4f}, "server_cpu_pct": {:.1f}, "own_cpu_pct": {:.1f}, "why": "{}"}})",
       i ? ", " : "", s.step, s.rate, s.held, s.msgs_per_s, s.deliveries_per_s,
       s.states_sent_per_s, s.state_deliveries_per_s, s.ack_p99_ms, s.delivery_p99_ms,
       s.state_p99_ms, s.accepted_pct, s.server_cpu_pct, s.own_cpu_pct, esc(s.why));
  }
  kv("],\n  \"last_good_step\": {},\n  \"timeline\": [", r.last_good_step);
  auto tl = timeline(r);
  for (size_t i = 0; i < tl.size(); ++i) {
    const TimelinePoint& p = tl[i];
    kv(R"({}{{"t": {:.2f}, "rate": {:.1f}, "held": {:.0f}, "acks_per_s": {:.1f}, "deliveries_per_s": {:.1f}, "states_per_s": {:.1f}, "bytes_in_per_s": {:.0f}, "bytes_out_per_s": {:.0f}, "rejected_per_s": {:.1f}, "ack_p50_ms": {:.3f}, "ack_p99_ms": {:.3f}, "delivery_p50_ms": {:.3f}, "delivery_p99_ms": {:.3f}, "state_p99_ms": {:.3f}, "own_cpu_pct": {:.1f}, "server_cpu_pct": {:.1f}, "server_rss_mib": {:.1f}}})",
       i ? ",\n    " : "\n    ", p.t, p.rate, p.held, p.acks_per_s, p.deliveries_per_s,
       p.states_per_s, p.bytes_in_per_s, p.bytes_out_per_s, p.rejected_per_s, p.ack_p50_ms,
       p.ack_p99_ms, p.delivery_p50_ms, p.delivery_p99_ms, p.state_p99_ms, p.own_cpu_pct,
       p.server_cpu_pct, p.server_rss_mib);
  }
  kv("\n  ],\n  \"exit_code\": {}\n}}\n", r.exit_code);
#undef kv
  return j;
}

bool write_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream f(path, std::ios::binary);
  f << text;
  return bool(f);
}

}  // namespace bench
