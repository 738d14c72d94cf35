#include "compare.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "compare_ramp.h"
#include "cpu_affinity.h"
#include "hook_figures.h"
#include "procstat.h"
#include "report.h"
#include "runner.h"
#include "server_process.h"

#ifndef PARLEY_BENCH_SOURCE_DIR
#define PARLEY_BENCH_SOURCE_DIR "bench"
#endif

namespace bench {

namespace fs = std::filesystem;

namespace {

fs::path self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return fs::current_path();
  buf[n] = 0;
  return fs::path(buf).parent_path();
}

// The config Parley gets in a comparison: one tenant, limits out of the way, and the
// peers' semantics for the namespaces the peer scenarios use (not durable, 20 ms
// tick). `chat` stays durable (embedded store): that is Parley's real cost.
// threads: Parley's loops, matched to the CPUs it is pinned to (0: its default).
// max_connections (12,000: chat-6k's 10,000 and room for reconnects): under the
// 20,000-file limit the default (19,000) leaves the
// sockets before `hello` 616 places (server.cc, socket_limits), and a generator
// that opens its connections at once would see the rest shed and retried, work
// that spills into the load phase (room 2,000 and broadcast paid it, issue 23).
// hook_url (parley-hook): hook_pub on the namespace the scenario publishes to, its
// other hook keys at their defaults (200 ms, fail closed), as a game would start.
std::string parley_config(const Options& o, int port, const fs::path& data, int threads,
                          const std::string& hook_url = "") {
  std::string cfg = fmt::format(R"([server]
listen = "127.0.0.1:{}"
store = "embedded"
data_dir = "{}"
max_connections = 12000
{}

[tenants.{}]
secret = "{}"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
)",
                                port, data.string(),
                                threads > 0 ? fmt::format("threads = {}", threads) : "", o.tenant,
                                o.secret);
  const std::string hook = hook_url.empty() ? "" : fmt::format("hook_pub = \"{}\"\n", hook_url);
  for (const auto& [ns, keys] : std::vector<std::pair<std::string, std::string>>{
           {"room", "durable = false\ntick_ms = 20\n"},
           {"world", "durable = false\ntick_ms = 20\npresence = true\n"}})
    cfg += fmt::format("\n[tenants.{}.namespaces.{}]\n{}{}", o.tenant, ns, keys,
                       ns == o.ns ? hook : "");
  if (!hook.empty() && o.ns != "room" && o.ns != "world")
    cfg += fmt::format("\n[tenants.{}.namespaces.{}]\n{}", o.tenant, o.ns, hook);
  return cfg;
}

double p99_ms(const RunResult& r) {
  return double(std::max(r.latencies.delivery.percentile(99), r.latencies.state.percentile(99))) /
         1e6;
}

double per_cpu(const RunResult& r) {
  return r.server_cpu_s > 0 ? double(r.all_deliveries_in_load()) / r.server_cpu_s : 0;
}

// The hook's counters before the server stops, the app server's CPU over the run,
// and the run failed unless every acked pub was asked once and allowed.
void read_hook_figures(const Options& o, const ProcStat& app_before, RunResult& r) {
  const std::string label = o.tenant + "/" + o.ns + "/pub";
  if (auto metrics = http_get_loopback(o.port, "/metrics")) {
    r.hook = parse_hook_metrics(*metrics, label);
  } else {
    r.hook.label = label;
  }
  const ProcStat app_after = read_proc(o.app_pid);
  if (app_before.ok && app_after.ok) r.hook.app_cpu_s = app_after.cpu_s - app_before.cpu_s;
  r.hook_note = hook_problem(r.hook, r.counters.acked);
  if (o.app_pid > 0 && !app_after.alive)
    r.hook_note += std::string(r.hook_note.empty() ? "" : "; ") + "the --app-pid process is gone";
  if (!r.hook_note.empty()) r.exit_code = std::max(r.exit_code, 1);
}

// Per message, every target (parley beside parley-hook): what a pub hook adds to the
// ack and to the server's CPU, and what the app server spends on it.
void print_hook_table(const std::vector<std::unique_ptr<RunResult>>& results) {
  auto per_msg_us = [](const RunResult& r) {
    const double msgs = double(r.at_load_end.acked - r.at_load_start.acked);
    return msgs > 0 && r.server_cpu_s >= 0 ? r.server_cpu_s * 1e6 / msgs : 0.0;
  };
  auto ack_ms = [](const RunResult& r, double p) { return double(r.latencies.ack.percentile(p)) / 1e6; };
  fmt::print("\npub hook, per message (load phase; app server: its CPU over the run / hook requests)\n");
  fmt::print("  {:<12} {:>8} {:>10} {:>10} {:>14} {:>13} {:>14} {:>12} {:>9} {:>9}\n", "target", "msgs/s",
             "ack p50 ms", "ack p99 ms", "srv CPU us/msg", "deliv/CPU-s", "app CPU us/msg",
             "hook mean us", "allowed", "problems");
  for (auto& rp : results) {
    const RunResult& r = *rp;
    const HookFigures& h = r.hook;
    const bool app = h.present && h.app_cpu_s >= 0 && h.requests > 0;
    fmt::print("  {:<12} {:>8.0f} {:>10.2f} {:>10.2f} {:>14.1f} {:>13.0f} {:>14} {:>12} {:>9} {:>9}\n",
               r.o.target_name, r.per_s(&Counters::acked), ack_ms(r, 50), ack_ms(r, 99),
               per_msg_us(r), per_cpu(r), app ? fmt::format("{:.1f}", h.app_cpu_s * 1e6 / h.requests) : "-",
               h.present ? fmt::format("{:.0f}", h.mean_latency_us()) : "-",
               h.present ? fmt::format("{:.0f}", h.allowed) : "-",
               r.hook_note.empty() ? (h.present ? "none" : "-") : "FAIL");
  }
  for (auto& rp : results)
    if (!rp->hook_note.empty()) fmt::print("  {}: {}\n", rp->o.target_name, rp->hook_note);
}

}  // namespace

int compare(const Options& base) {
  if (base.hook_url.empty() && ("," + base.targets + ",").find(",parley-hook,") != std::string::npos) {
    fmt::print(stderr, "compare: parley-hook wants --hook-url URL (the app server's)\n");
    return 2;
  }
  fs::path tmp = fs::temp_directory_path() / fmt::format("parley-bench-compare-{}", getpid());
  fs::create_directories(tmp);
  fs::path peers = base.peers_dir.empty() ? fs::path(PARLEY_BENCH_SOURCE_DIR) : fs::path(base.peers_dir);
  // Parley from this build tree, else the main build of the source tree.
  fs::path parley_bin = base.parley_bin;
  if (parley_bin.empty()) {
    for (fs::path p : {self_dir().parent_path().parent_path() / "src/server/parley",
                       fs::path(PARLEY_BENCH_SOURCE_DIR).parent_path() / "build/src/server/parley"})
      if (fs::exists(p)) {
        parley_bin = p;
        break;
      }
  }
  std::vector<std::string> targets;
  {
    std::stringstream ss(base.targets);
    std::string t;
    while (std::getline(ss, t, ',')) targets.push_back(t);
  }
  // Split cores: the generator (this process; its worker threads start later and
  // inherit the mask) on --bench-cpus, every target on --server-cpus.
  std::unique_ptr<CpuList> server_cpus;
  std::string split;
  if (!base.server_cpus.empty()) {
    try {
      server_cpus = std::make_unique<CpuList>(parse_cpu_list("--server-cpus", base.server_cpus));
      const CpuList bench_cpus = parse_cpu_list("--bench-cpus", base.bench_cpus);
      cpu_set_t both;
      CPU_AND(&both, &server_cpus->set, &bench_cpus.set);
      if (CPU_COUNT(&both) > 0)
        throw std::runtime_error("--server-cpus and --bench-cpus overlap");
      if (!pin(0, bench_cpus)) throw std::runtime_error("sched_setaffinity of the generator failed");
      split = fmt::format("split cores: targets on CPUs {}, generator on CPUs {}", server_cpus->text,
                          bench_cpus.text);
    } catch (const std::exception& e) {
      fmt::print(stderr, "compare: {}\n", e.what());
      return 2;
    }
  }
  std::vector<std::unique_ptr<RunResult>> results;
  int exit_code = 0;
  for (const std::string& target : targets) {
    Options o = base;
    o.target_name = target;
    o.port = free_port();
    o.host = "127.0.0.1";
    o.transport = "ws";
    o.ws_path = "/v1/ws";
    std::vector<std::string> argv;
    // parley-msgpack: the same server, every client in MessagePack (issue 25);
    // the peers speak JSON only.
    o.encoding = target == "parley-msgpack" ? "msgpack" : "json";
    const bool hooked = target == "parley-hook";
    if (target == "parley" || target == "parley-msgpack" || hooked) {
      // Each target its own data: one side's log is not the other's start.
      fs::path cfg = tmp / (target + ".toml");
      fs::create_directories(tmp / (target + "-data"));
      std::ofstream(cfg) << parley_config(o, o.port, tmp / (target + "-data"),
                                          server_cpus ? server_cpus->count : 0,
                                          hooked ? base.hook_url : "");
      argv = {parley_bin.string(), "serve", "--config", cfg.string()};
    } else if (target == "node-ws") {
      o.history_check = false;
      argv = {"node", (peers / "peers/node-ws-room.js").string(), std::to_string(o.port)};
    } else if (target == "bun") {
      o.history_check = false;
      argv = {(peers / "node_modules/bun/bin/bun.exe").string(),
              (peers / "peers/bun-room.js").string(), std::to_string(o.port)};
    } else if (target == "floor") {
      // bench/floor: one thread, one send() per delivery; the machine's limit.
      o.history_check = false;
      argv = {(self_dir() / "parley-floor").string(), std::to_string(o.port)};
    } else if (target == "floor-tick") {
      // The same with one send per connection per 20 ms tick (Parley's
      // tick_ms in these runs): the fewest sends a tick batcher can make.
      o.history_check = false;
      argv = {(self_dir() / "parley-floor").string(), std::to_string(o.port), "20"};
    } else {
      fmt::print(stderr, "compare: unknown target {} (parley, parley-msgpack, parley-hook, node-ws, bun, floor, floor-tick)\n",
                 target);
      return 2;
    }
    o.server_cmd = shell_join(argv);
    if (server_cpus) o.server_cmd = "taskset -c " + server_cpus->text + " " + o.server_cmd;
    if (base.ramp_compare) make_ramp(o);
    if (!o.json_out.empty()) {
      fs::path j(o.json_out);
      o.json_out = (j.parent_path() / fmt::format("{}-{}{}", j.stem().string(), target,
                                                  j.extension().string()))
                       .string();
    }
    ServerProcess server;
    fs::path log = tmp / (target + ".log");
    fmt::print(stderr, "\n== {}: {}\n", target, o.server_cmd);
    if (!server.start(argv, log.string(), o.port, 15, server_cpus.get())) {
      fmt::print(stderr, "compare: {} did not start (see {}; bench/setup.sh installs the peers)\n",
                 target, log.string());
      exit_code = 2;
      continue;
    }
    o.server_pid = server.pid();
    const ProcStat app_before = read_proc(base.app_pid);
    auto r = std::make_unique<RunResult>(run(o));
    if (hooked) read_hook_figures(o, app_before, *r);
    server.stop();
    print_table(*r);
    if (!o.json_out.empty()) write_file(o.json_out, to_json(*r));
    if (r->exit_code != 0) exit_code = std::max(exit_code, r->exit_code);
    results.push_back(std::move(r));
  }
  if (results.empty()) return exit_code ? exit_code : 2;

  if (!split.empty()) fmt::print("\n{}\n", split);
  if (base.ramp_compare) {
    std::vector<const RunResult*> rs;
    for (auto& r : results) rs.push_back(r.get());
    print_ramp_table(base, rs);
  }
  const RunResult& ref = *results.front();
  fmt::print("\ncompare {}{} ({} connections, channels of {}, {:g} msg/s, state {:g} Hz): ratios are target / {}\n",
             base.preset.empty() ? base.scenario : base.preset,
             base.load_x != 1 ? fmt::format(" at {:g}x load", base.load_x) : "", base.conns,
             base.channel_size, base.rate, base.state_hz, ref.o.target_name);
  fmt::print("  {:<9} {:>13} {:>10} {:>13} {:>8} {:>10} {:>8} {:>9} {:>8} {:>8} {:>6}\n", "target",
             "deliveries/s", "srv CPU s", "deliv/CPU-s", "ratio", "p99 ms", "ratio", "RSS MiB",
             "ratio", "own CPU", "audit");
  for (auto& rp : results) {
    const RunResult& r = *rp;
    auto ratio = [](double a, double b) { return b > 0 ? fmt::format("{:.2f}x", a / b) : "-"; };
    fmt::print("  {:<9} {:>13.0f} {:>10.2f} {:>13.0f} {:>8} {:>10.2f} {:>8} {:>9.1f} {:>8} {:>8.2f} {:>6}\n",
               r.o.target_name,
               r.per_s(&Counters::deliveries) + r.per_s(&Counters::state_deliveries),
               r.server_cpu_s, per_cpu(r), ratio(per_cpu(r), per_cpu(ref)), p99_ms(r),
               ratio(p99_ms(r), p99_ms(ref)), double(r.server_peak_rss) / 1048576.0,
               ratio(double(r.server_peak_rss), double(ref.server_peak_rss)), r.own_cpu_s,
               r.audit_failed() ? "FAIL" : "pass");
  }
  for (auto& rp : results)
    if (rp->generator_behind)
      fmt::print("  note: the load generator fell behind against {} ({})\n", rp->o.target_name,
                 rp->generator_note);
  if (std::any_of(results.begin(), results.end(), [](auto& r) { return r->o.target_name == "parley-hook"; }))
    print_hook_table(results);
  if (!base.html_out.empty()) {
    std::vector<const RunResult*> rs;
    for (auto& r : results) rs.push_back(r.get());
    write_file(base.html_out, to_html(rs, fmt::format("parley-bench compare {}",
                                                      base.preset.empty() ? base.scenario
                                                                          : base.preset)));
  }
  if (exit_code == 0) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  } else {
    fmt::print(stderr, "compare: server logs kept in {}\n", tmp.string());
  }
  return exit_code;
}

}  // namespace bench
