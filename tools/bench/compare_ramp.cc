#include "compare_ramp.h"

#include <fmt/format.h>

namespace bench {

void make_ramp(Options& o) {
  o.scenario = "ramp";
  o.ramp_of = o.state_hz > 0 ? "state" : "rate";
  // The capacity bound of issue 29 (a game's frame budget), unless one was given:
  // Options' 100 ms is the ramp preset's.
  if (o.max_p99_ms == 100) o.max_p99_ms = 50;
  // One step broken by something else on the machine (a neighbour's burst) is not
  // the cliff: a broken step runs once more at its rate, unless told otherwise.
  if (o.ramp_repeats < 0) o.ramp_repeats = 1;
}

namespace {
struct Held {
  double rate = 0;        // msgs/s, or state Hz per connection
  double deliveries = 0;  // msg + state deliveries/s at that step
  double server_cpu_pct = 0;
  std::string next;       // why the step after it broke ("" if none broke)
};

Held held_of(const RunResult& r) {
  Held h;
  if (r.last_good_step >= 0 && size_t(r.last_good_step) < r.steps.size()) {
    const StepResult& s = r.steps[size_t(r.last_good_step)];
    h.rate = s.rate;
    h.deliveries = s.deliveries_per_s + s.state_deliveries_per_s;
    h.server_cpu_pct = s.server_cpu_pct;
  }
  if (!r.steps.empty() && !r.steps.back().held) {
    const StepResult& s = r.steps.back();
    h.next = fmt::format("{:g} broke: {}", s.rate, s.why);
  } else {
    h.next = "held to the last step (--max-steps)";
  }
  return h;
}
}  // namespace

void print_ramp_table(const Options& base, const std::vector<const RunResult*>& results) {
  if (results.empty()) return;
  const bool state = base.state_hz > 0;
  const Held ref = held_of(*results.front());
  fmt::print("\ncompare --ramp {}: the highest {} each target held (p99 <= {:g} ms, nothing lost, "
             "generator not behind), x{:g} every {:g} s; ratios are target / {}\n",
             base.preset.empty() ? base.scenario : base.preset,
             state ? "state rate (Hz per avatar)" : "pub rate (msgs/s)", results.front()->o.max_p99_ms,
             base.step_factor, base.step_s, results.front()->o.target_name);
  fmt::print("  {:<10} {:>12} {:>8} {:>14} {:>8} {:>9}  {}\n", "target", state ? "Hz held" : "msgs/s held",
             "ratio", "deliveries/s", "ratio", "srv CPU%", "next step");
  auto ratio = [](double a, double b) { return b > 0 ? fmt::format("{:.2f}x", a / b) : "-"; };
  for (const RunResult* r : results) {
    const Held h = held_of(*r);
    if (r->last_good_step < 0) {  // not even the shape's offered load held
      fmt::print("  {:<10} {:>12} {:>8} {:>14} {:>8} {:>9}  {}\n", r->o.target_name, "none", "-", "-",
                 "-", "-", h.next);
      continue;
    }
    fmt::print("  {:<10} {:>12.1f} {:>8} {:>14.0f} {:>8} {:>9.0f}  {}\n", r->o.target_name, h.rate,
               ratio(h.rate, ref.rate), h.deliveries, ratio(h.deliveries, ref.deliveries),
               h.server_cpu_pct, h.next);
  }
}

}  // namespace bench
