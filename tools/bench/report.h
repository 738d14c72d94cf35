// Turning a RunResult into what people read: a table on stdout, a JSON file, and a
// self-contained HTML page with charts over time (report_html.cc).
#pragma once

#include <string>
#include <vector>

#include "runner.h"

namespace bench {

// One row per second of the run, rates and interval percentiles (JSON and charts).
struct TimelinePoint {
  double t = 0, rate = 0;
  double held = 0, acks_per_s = 0, deliveries_per_s = 0, states_per_s = 0;
  double bytes_in_per_s = 0, bytes_out_per_s = 0;
  double ack_p50_ms = 0, ack_p99_ms = 0, delivery_p50_ms = 0, delivery_p99_ms = 0;
  double state_p99_ms = 0;
  double own_cpu_pct = 0, server_cpu_pct = -1, server_rss_mib = -1;
  double rejected_per_s = 0;
};
std::vector<TimelinePoint> timeline(const RunResult& r);

void print_table(const RunResult& r);
std::string to_json(const RunResult& r);
std::string to_html(const std::vector<const RunResult*>& runs, const std::string& title);
bool write_file(const std::string& path, const std::string& text);

}  // namespace bench
