// The HTML report: one self-contained page (inline CSS and SVG, no script, no
// network), readable offline and diffable in review.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report.h"

namespace bench {

namespace {

struct Series {
  std::string name, color;
  std::vector<double> y;
};

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten.
double nice_max(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (v <= m * p) return m * p;
  return 10 * p;
}

std::string fmt_num(double v) {
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.3g}", v);
}

std::string chart(const std::string& title, const std::string& unit, const std::vector<double>& x,
                  const std::vector<Series>& series, double load_start, double load_end) {
  const double W = 640, H = 220, L = 56, R = 12, T = 26, B = 28;
  double xmax = x.empty() ? 1 : std::max(1.0, x.back());
  double ymax = 0;
  for (auto& s : series)
    for (double v : s.y) ymax = std::max(ymax, v);
  ymax = nice_max(ymax * 1.05);
  auto px = [&](double v) { return L + (W - L - R) * v / xmax; };
  auto py = [&](double v) { return H - B - (H - T - B) * std::clamp(v, 0.0, ymax) / ymax; };
  std::string s = fmt::format(
      R"(<svg class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img"><title>{}</title>)",
      W, H, W, H, html_escape(title));
  s += fmt::format(R"(<text x="{}" y="16" class="t">{} ({})</text>)", L, html_escape(title), unit);
  if (load_end > load_start)
    s += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" class="load"/>)",
                     px(load_start), T, px(load_end) - px(load_start), H - T - B);
  for (int i = 0; i <= 4; ++i) {
    double v = ymax * i / 4;
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" class="g"/>)", L, W - R,
                     py(v), py(v));
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="a" text-anchor="end">{}</text>)", L - 4,
                     py(v) + 4, fmt_num(v));
  }
  for (int i = 0; i <= 5; ++i) {
    double v = xmax * i / 5;
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="a" text-anchor="middle">{:.0f}s</text>)",
                     px(v), H - 8, v);
  }
  double lx = L + 8;
  for (auto& se : series) {
    std::string pts;
    for (size_t i = 0; i < x.size() && i < se.y.size(); ++i)
      if (se.y[i] >= 0) pts += fmt::format("{:.1f},{:.1f} ", px(x[i]), py(se.y[i]));
    s += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.6"/>)", pts,
                     se.color);
    s += fmt::format(R"(<rect x="{:.0f}" y="{}" width="10" height="3" fill="{}"/><text x="{:.0f}" y="{}" class="a">{}</text>)",
                     lx, T + 4, se.color, lx + 13, T + 8, html_escape(se.name));
    lx += 20 + 6.5 * double(se.name.size());
  }
  s += "</svg>\n";
  return s;
}

std::string run_section(const RunResult& r) {
  auto tl = timeline(r);
  std::vector<double> x;
  auto col = [&](double TimelinePoint::*f) {
    std::vector<double> v;
    for (auto& p : tl) v.push_back(p.*f);
    return v;
  };
  for (auto& p : tl) x.push_back(p.t);
  const Counters& c = r.counters;
  std::string s = fmt::format("<section><h2>{} — {} {}</h2>\n", html_escape(r.o.target_name),
                              html_escape(r.o.scenario), html_escape(r.o.preset));
  s += fmt::format("<p class=\"cmd\"><code>{}</code><br>{} — {}</p>\n",
                   html_escape(r.o.command_line), html_escape(r.started_at),
                   html_escape(r.machine));
  if (!r.o.server_cmd.empty())
    s += fmt::format("<p class=\"cmd\">server: <code>{}</code></p>\n", html_escape(r.o.server_cmd));
  auto row = [&](const char* name, const Histogram& h) {
    if (!h.count()) return std::string();
    return fmt::format(
        "<tr><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{}</td></tr>",
        name, h.percentile(50) / 1e6, h.percentile(95) / 1e6, h.percentile(99) / 1e6,
        h.percentile(99.9) / 1e6, h.max() / 1e6, h.count());
  };
  s += "<table><tr><th>latency ms</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>n</th></tr>";
  s += row("ack", r.latencies.ack) + row("delivery", r.latencies.delivery) +
       row("state", r.latencies.state) + row("send lag (bench)", r.latencies.send_lag);
  s += "</table>\n<table>";
  auto fig = [&](const std::string& k, const std::string& v) {
    s += fmt::format("<tr><td>{}</td><td>{}</td></tr>", k, v);
  };
  fig("connections (held at end of load)", fmt::format("{} of {}", r.at_load_end.held(), r.o.conns));
  fig("msgs acked/s", fmt::format("{:.1f}", r.per_s(&Counters::acked)));
  fig("deliveries/s", fmt::format("{:.1f}", r.per_s(&Counters::deliveries)));
  if (c.state_deliveries)
    fig("state deliveries/s", fmt::format("{:.1f}", r.per_s(&Counters::state_deliveries)));
  fig("bytes in/s", fmt_num(r.per_s(&Counters::bytes_in)));
  fig("accepted", fmt::format("{:.3f} %", r.accepted_pct()));
  fig("load generator CPU s", fmt::format("{:.2f}", r.own_cpu_s));
  if (r.server_cpu_s >= 0) {
    fig("server CPU s (load phase)", fmt::format("{:.2f}", r.server_cpu_s));
    fig("server peak RSS", fmt::format("{:.1f} MiB", r.server_peak_rss / 1048576.0));
    if (r.server_cpu_s > 0)
      fig("deliveries per server CPU-s",
          fmt::format("{:.0f}", r.all_deliveries_in_load() / r.server_cpu_s));
  }
  fig("audit", fmt::format("{} — lost {}, duplicates {}, reorders {}, mismatches {}, history "
                           "missing {} ({} checked)",
                           r.audit_failed() ? "<b class=bad>FAIL</b>" : "<b class=ok>pass</b>",
                           c.lost, c.duplicates, c.reorders, c.mismatches, c.history_missing,
                           c.history_checked));
  if (r.generator_behind) fig("load generator", "<b class=bad>fell behind</b> " + r.generator_note);
  s += "</table>\n";
  double ls = r.load_start_t, le = r.load_end_t;
  s += chart("Latency, per second", "ms", x,
             {{"ack p50", "#1f77b4", col(&TimelinePoint::ack_p50_ms)},
              {"ack p99", "#aec7e8", col(&TimelinePoint::ack_p99_ms)},
              {"delivery p50", "#d62728", col(&TimelinePoint::delivery_p50_ms)},
              {"delivery p99", "#ff9896", col(&TimelinePoint::delivery_p99_ms)},
              {"state p99", "#9467bd", col(&TimelinePoint::state_p99_ms)}},
             ls, le);
  s += chart("Throughput", "per second", x,
             {{"acks", "#1f77b4", col(&TimelinePoint::acks_per_s)},
              {"deliveries", "#d62728", col(&TimelinePoint::deliveries_per_s)},
              {"states", "#9467bd", col(&TimelinePoint::states_per_s)},
              {"rejected", "#7f7f7f", col(&TimelinePoint::rejected_per_s)}},
             ls, le);
  s += chart("Connections held", "count", x,
             {{"held", "#2ca02c", col(&TimelinePoint::held)}}, ls, le);
  s += chart("CPU", "% of one core", x,
             {{"server", "#ff7f0e", col(&TimelinePoint::server_cpu_pct)},
              {"load generator", "#8c564b", col(&TimelinePoint::own_cpu_pct)}},
             ls, le);
  s += chart("Server memory", "RSS MiB", x,
             {{"server RSS", "#17becf", col(&TimelinePoint::server_rss_mib)}}, ls, le);
  if (!r.steps.empty() && r.o.ramp_of == "state") {
    s += "<table><tr><th>step</th><th>state Hz</th><th>states/s</th><th>state deliveries/s</th><th>state p99</th><th>delivery p99</th><th>accepted</th><th></th></tr>";
    for (auto& st : r.steps)
      s += fmt::format("<tr><td>{}</td><td>{:.2f}</td><td>{:.0f}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.3f}%</td><td>{}</td></tr>",
                       st.step, st.rate, st.states_sent_per_s, st.state_deliveries_per_s,
                       st.state_p99_ms, st.delivery_p99_ms, st.accepted_pct,
                       st.held ? "held" : html_escape(st.why));
    s += "</table>\n";
  } else if (!r.steps.empty()) {
    s += "<table><tr><th>step</th><th>rate</th><th>acked/s</th><th>deliveries/s</th><th>ack p99</th><th>delivery p99</th><th>accepted</th><th></th></tr>";
    for (auto& st : r.steps)
      s += fmt::format("<tr><td>{}</td><td>{:.0f}</td><td>{:.0f}</td><td>{:.0f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.3f}%</td><td>{}</td></tr>",
                       st.step, st.rate, st.msgs_per_s, st.deliveries_per_s, st.ack_p99_ms,
                       st.delivery_p99_ms, st.accepted_pct, st.held ? "held" : html_escape(st.why));
    s += "</table>\n";
  }
  s += "</section>\n";
  return s;
}

}  // namespace

std::string to_html(const std::vector<const RunResult*>& runs, const std::string& title) {
  std::string s = fmt::format(R"(<!doctype html><html><head><meta charset="utf-8"><title>{}</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}}
table{{border-collapse:collapse;margin:8px 0}} td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}} .cmd code{{font-size:12px;word-break:break-all}}
.chart{{display:block;margin:6px 0}} .chart .t{{font-weight:600;font-size:13px}} .chart .a{{font-size:11px;fill:#555}}
.chart .g{{stroke:#e4e4e4}} .chart .load{{fill:#f3f7ff}} .bad{{color:#b00}} .ok{{color:#070}}
</style></head><body><h1>{}</h1>
<p>Shaded: the load phase (before it: connecting; after it: drain and audit).</p>
)",
                              html_escape(title), html_escape(title));
  if (runs.size() > 1) {
    s += "<table><tr><th>target</th><th>deliveries/s</th><th>deliveries per server CPU-s</th><th>delivery p99 ms</th><th>peak RSS MiB</th><th>audit</th></tr>";
    for (const RunResult* r : runs) {
      double dpc = r->server_cpu_s > 0 ? r->all_deliveries_in_load() / r->server_cpu_s : 0;
      s += fmt::format("<tr><td>{}</td><td>{:.0f}</td><td>{:.0f}</td><td>{:.2f}</td><td>{:.1f}</td><td>{}</td></tr>",
                       html_escape(r->o.target_name),
                       r->per_s(&Counters::deliveries) + r->per_s(&Counters::state_deliveries),
                       dpc, std::max(r->latencies.delivery.percentile(99), r->latencies.state.percentile(99)) / 1e6,
                       r->server_peak_rss / 1048576.0, r->audit_failed() ? "FAIL" : "pass");
    }
    s += "</table>\n";
  }
  for (const RunResult* r : runs) s += run_section(*r);
  s += "</body></html>\n";
  return s;
}

}  // namespace bench
