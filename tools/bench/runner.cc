#include "runner.h"

#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "proc_pipe.h"
#include "procstat.h"
#include "worker.h"

namespace bench {

namespace {

using Emit = std::function<void(const Sample&)>;

void sleep_until_ns(int64_t t) {
  timespec ts{time_t(t / 1'000'000'000), long(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double ms(uint64_t ns) { return double(ns) / 1e6; }

// A send lag p99 above this marks a run (or a ramp step) as the generator's, not
// the server's (bench/README.md "send lag").
constexpr double kBehindSendLagMs = 50;

// Merges samples (t0, t1] of a run into one step verdict (ramp scenario).
StepResult evaluate_step(const Options& o, const std::vector<Sample>& samples, int step,
                         double rate, double t0, double t1) {
  StepResult r;
  r.step = step;
  r.rate = rate;
  r.t_start = t0;
  r.t_end = t1;
  Latencies lat;
  const Sample* first = nullptr;
  const Sample* last = nullptr;
  for (const Sample& s : samples) {
    if (s.t <= t0 + 1e-9) first = &s;
    if (s.t > t0 + 1e-9 && s.t <= t1 + 1e-9) {
      lat.merge(s.interval);
      last = &s;
    }
  }
  if (!first || !last) {
    r.why = "no samples";
    return r;
  }
  Counters d = last->total - first->total;
  double secs = t1 - t0;
  r.msgs_per_s = double(d.acked) / secs;
  r.deliveries_per_s = double(d.deliveries) / secs;
  r.states_sent_per_s = double(d.state_sent) / secs;
  r.state_deliveries_per_s = double(d.state_deliveries) / secs;
  r.ack_p99_ms = ms(lat.ack.percentile(99));
  r.delivery_p99_ms = ms(lat.delivery.percentile(99));
  r.state_p99_ms = ms(lat.state.percentile(99));
  // Accepted at first try: acks trail their pubs, so acked/attempted inside a short
  // window would read as loss at every step boundary; rejections do not.
  uint64_t rejected = d.rate_limited + d.backpressure + d.unavailable + d.pub_errors;
  r.accepted_pct = d.pub_sent ? 100.0 * (1.0 - double(rejected) / double(d.pub_sent)) : 100;
  r.held = true;
  // The state ramp schedules rate x connections states/s; sending under 95 % of that
  // means the generator (or its connections) could not keep up.
  const double states_scheduled = o.ramp_of == "state" ? rate * double(o.conns) : 0;
  if (r.delivery_p99_ms > o.max_p99_ms) {
    r.held = false;
    r.why = fmt::format("delivery p99 {:.1f} ms > {} ms", r.delivery_p99_ms, o.max_p99_ms);
  } else if (r.state_p99_ms > o.max_p99_ms) {
    r.held = false;
    r.why = fmt::format("state p99 {:.1f} ms > {} ms", r.state_p99_ms, o.max_p99_ms);
  } else if (states_scheduled > 0 && r.states_sent_per_s < 0.95 * states_scheduled) {
    r.held = false;
    r.why = fmt::format("the load generator sent {:.0f} of {:.0f} states/s",
                        r.states_sent_per_s, states_scheduled);
  } else if (r.accepted_pct < o.min_accepted_pct) {
    r.held = false;
    r.why = fmt::format("accepted {:.3f} % < {} %", r.accepted_pct, o.min_accepted_pct);
  } else if (d.gaps || d.duplicates || d.reorders || d.mismatches) {
    r.held = false;
    r.why = "gaps, duplicates or reorders seen";
  } else if (d.disconnects) {
    r.held = false;
    r.why = fmt::format("{} disconnects", d.disconnects);
  } else if (d.sched_skipped) {
    r.held = false;
    r.why = "the load generator fell behind its schedule";
  } else if (ms(lat.send_lag.percentile(99)) > kBehindSendLagMs) {
    r.held = false;
    r.why = fmt::format("the load generator fell behind (send lag p99 {:.1f} ms)",
                        ms(lat.send_lag.percentile(99)));
  }
  return r;
}

struct LocalFinal {
  Counters counters;
  Latencies latencies;
  AuditResult audit;
  double own_cpu_s = 0;
  double load_end_t = 0;
  std::vector<StepResult> steps;
  int last_good_step = -1;
};

// The whole timeline of one process. emit() gets every per-second sample.
LocalFinal run_local(const Options& o, int64_t t0, const Emit& emit) {
  // compare runs several loads in one process: each reports only its own CPU.
  const double cpu_at_start = self_cpu_s();
  std::vector<std::unique_ptr<Worker>> workers;
  for (int w = 0; w < o.threads; ++w)
    workers.push_back(std::make_unique<Worker>(o, w, assign(o, o.proc_index, w), double(o.conns)));
  for (auto& w : workers) w->start(t0);

  std::vector<Sample> own;  // this process's samples (ramp decisions)
  auto take = [&](double t, double rate) {
    Sample s;
    s.t = t;
    s.rate = rate;
    for (auto& w : workers) {
      auto [c, lat] = w->sample();
      s.total += c;
      s.interval.merge(lat);
    }
    s.own_cpu_s = self_cpu_s() - cpu_at_start;
    emit(s);
    own.push_back(std::move(s));
  };
  auto at = [&](double t) { return t0 + int64_t(t * 1e9); };

  LocalFinal f;
  const int load_start = int(std::ceil(o.ramp_s)) + 1;
  const bool ramp = o.scenario == "ramp";
  // A ramp has room for every step and its repeats; it ends after max_steps held.
  const int repeats = std::max(0, o.ramp_repeats);
  const int duration = ramp ? int(std::ceil(o.step_s)) * o.max_steps * (1 + repeats)
                            : int(std::ceil(o.duration_s));
  const int step_len = std::max(1, int(std::ceil(o.step_s)));
  int k = 1;
  for (; k <= load_start; ++k) {
    sleep_until_ns(at(k));
    take(k, 0);
  }
  const bool ramp_state = ramp && o.ramp_of == "state";
  double rate = ramp_state ? o.state_hz : o.rate;
  for (auto& w : workers) {
    w->set_rate(o.rate);
    w->set_publishing(true);
  }
  int step = 0;
  int repeats_left = repeats;
  for (; k <= load_start + duration; ++k) {
    sleep_until_ns(at(k));
    take(k, rate);
    if (ramp && (k - load_start) % step_len == 0) {
      StepResult r = evaluate_step(o, own, step, rate, k - step_len, k);
      f.steps.push_back(r);
      if (!r.held && repeats_left > 0) {  // the same rate again before calling it the cliff
        --repeats_left;
        continue;
      }
      if (!r.held || step + 1 >= o.max_steps) {
        if (r.held) f.last_good_step = int(f.steps.size()) - 1;
        ++k;
        break;
      }
      repeats_left = repeats;
      f.last_good_step = int(f.steps.size()) - 1;  // an index into steps
      ++step;
      rate *= o.step_factor;
      for (auto& w : workers) {
        if (ramp_state)
          w->set_state_hz(rate);
        else
          w->set_rate(rate);
      }
    }
  }
  f.load_end_t = k - 1;
  for (auto& w : workers) w->set_publishing(false);

  // Drain: every ack back and every member caught up, or --drain runs out.
  // A server still working through a backlog gets more time as long as deliveries
  // keep coming (an overloaded peer is slow, not lossy); --drain is the longest
  // stretch without progress, 120 s the hard bound.
  const int64_t quiet = int64_t(o.drain_s * 1e9);
  const int64_t hard_end = now_ns() + 120'000'000'000;
  int64_t drain_end = now_ns() + quiet;
  uint64_t last_progress = 0;
  auto drained = [&] {
    bool all = true;
    for (auto& w : workers)
      if (!w->drained()) all = false;
    uint64_t progress = own.empty() ? 0 : own.back().total.deliveries + own.back().total.acked +
                                              own.back().total.state_deliveries;
    if (progress != last_progress) {
      last_progress = progress;
      drain_end = std::min(hard_end, now_ns() + quiet);
    }
    return all;
  };
  auto tick = [&] {
    if (now_ns() >= at(k)) {
      take(k, 0);
      ++k;
    }
  };
  while (!drained() && now_ns() < drain_end) {
    sleep_until_ns(now_ns() + 50'000'000);
    tick();
  }
  if (o.history_check) {
    for (auto& w : workers) w->start_history_audit();
    int64_t hist_end = now_ns() + 20'000'000'000;
    auto done = [&] {
      for (auto& w : workers)
        if (!w->history_done()) return false;
      return true;
    };
    while (!done() && now_ns() < hist_end) {
      sleep_until_ns(now_ns() + 20'000'000);
      tick();
    }
  }
  take(double(now_ns() - t0) / 1e9, 0);
  for (auto& w : workers) {
    WorkerFinal wf = w->finish();
    f.counters += wf.counters;
    f.latencies.merge(wf.latencies);
    f.audit.members_checked += wf.audit.members_checked;
    f.audit.channels_checked += wf.audit.channels_checked;
    f.audit.acked_msgs += wf.audit.acked_msgs;
    f.audit.expected_deliveries += wf.audit.expected_deliveries;
  }
  f.audit.lost = f.counters.lost;
  f.audit.duplicates = f.counters.duplicates;
  f.audit.reorders = f.counters.reorders;
  f.audit.mismatches = f.counters.mismatches + f.counters.history_mismatch;
  f.own_cpu_s = self_cpu_s() - cpu_at_start;
  return f;
}

void print_progress(const Options& o, const Sample& s, const Sample* prev) {
  if (!o.progress) return;
  Counters d = prev ? s.total - prev->total : s.total;
  double dt = prev ? s.t - prev->t : s.t;
  if (dt <= 0.5) return;
  std::string srv;
  if (s.server_cpu_s >= 0 && prev && prev->server_cpu_s >= 0)
    srv = fmt::format(" srv {:.0f}% {:.0f}MiB", 100 * (s.server_cpu_s - prev->server_cpu_s) / dt,
                      double(s.server_rss) / 1048576.0);
  std::string own = prev ? fmt::format(" own {:.0f}%", 100 * (s.own_cpu_s - prev->own_cpu_s) / dt)
                         : std::string();
  fmt::print(stderr,
             "[{:5.0f}s] conns {} pub {:.0f}/s ack {:.0f}/s deliv {:.0f}/s state {:.0f}/s "
             "ack p99 {:.1f}ms deliv p99 {:.1f}ms rej {} gaps {} disc {}{}{}\n",
             s.t, s.total.held(), double(d.pub_sent) / dt, double(d.acked) / dt,
             double(d.deliveries) / dt, double(d.state_deliveries) / dt,
             ms(s.interval.ack.percentile(99)), ms(s.interval.delivery.percentile(99)),
             s.total.rate_limited + s.total.backpressure + s.total.unavailable, s.total.gaps, s.total.disconnects,
             own, srv);
}

// Adds server figures to a merged sample, prints progress, keeps it.
struct Collector {
  const Options& o;
  std::vector<Sample> samples;
  void add(Sample s) {
    if (o.server_pid > 0) {
      ProcStat ps = read_proc(o.server_pid);
      if (ps.ok) {
        s.server_cpu_s = ps.cpu_s;
        s.server_rss = ps.rss;
      }
    }
    print_progress(o, s, samples.empty() ? nullptr : &samples.back());
    samples.push_back(std::move(s));
  }
};

void finish_result(RunResult& r, const Options& o, Collector& col, LocalFinal& f) {
  r.samples = std::move(col.samples);
  r.counters = f.counters;
  r.latencies = f.latencies;
  r.audit = f.audit;
  r.own_cpu_s = f.own_cpu_s;
  r.steps = f.steps;
  r.last_good_step = f.last_good_step;
  r.load_start_t = int(std::ceil(o.ramp_s)) + 1;
  r.load_end_t = f.load_end_t;
  // The last sample taken at or before t (samples are in time order).
  auto sample_at = [&](double t) -> const Sample* {
    const Sample* found = nullptr;
    for (auto& s : r.samples)
      if (s.t <= t + 1e-9) found = &s;
    return found;
  };
  auto at_t = [&](double t) {
    const Sample* s = sample_at(t);
    return s ? s->total : Counters{};
  };
  r.at_load_start = at_t(r.load_start_t);
  r.at_load_end = at_t(r.load_end_t);
  double cpu_start = -1, cpu_end = -1;
  for (auto& s : r.samples) {
    if (s.server_cpu_s < 0) continue;
    if (s.t <= r.load_start_t + 1e-9) cpu_start = s.server_cpu_s;
    if (s.t <= r.load_end_t + 1e-9) cpu_end = s.server_cpu_s;
  }
  if (cpu_start >= 0 && cpu_end >= 0) r.server_cpu_s = cpu_end - cpu_start;
  for (auto& st : r.steps) {
    const Sample* a = sample_at(st.t_start);
    const Sample* b = sample_at(st.t_end);
    if (!a || !b || b->t <= a->t) continue;
    const double dt = b->t - a->t;
    st.own_cpu_pct = 100 * (b->own_cpu_s - a->own_cpu_s) / dt;
    if (a->server_cpu_s >= 0 && b->server_cpu_s >= 0)
      st.server_cpu_pct = 100 * (b->server_cpu_s - a->server_cpu_s) / dt;
  }
  if (o.server_pid > 0) {
    ProcStat ps = read_proc(o.server_pid);
    if (ps.ok) {
      r.server_peak_rss = ps.peak_rss;
      r.server_cpu_total_s = ps.cpu_s;
    }
    r.server_gone = !ps.ok || !ps.alive;
  }
  // The generator is the limit when it skipped scheduled sends or sent late.
  uint64_t lag_p99 = r.latencies.send_lag.percentile(99);
  if (r.counters.sched_skipped > 0 || ms(lag_p99) > kBehindSendLagMs) {
    r.generator_behind = true;
    r.generator_note = fmt::format("send lag p99 {:.1f} ms, {} sends skipped", ms(lag_p99),
                                   r.counters.sched_skipped);
  }
  // The server's death comes first (options.cc: 4): it explains whatever the
  // audit or the connections then saw (issue 30: a dead server whose audit also
  // failed exited 1). A crash at the end of a run can leave every audited member
  // whole, so the audit alone would pass it (a 10,000-connection ramp did).
  // A run that connected nothing, or published and got nothing acknowledged,
  // proves nothing: it fails even though no loss was seen.
  if (r.server_gone) {
    r.exit_code = 4;
  } else if (r.counters.conn_ready == 0 || (r.counters.pub_attempted + r.counters.pub_blocked > 0 &&
                                            r.counters.acked == 0)) {
    r.exit_code = 3;
  } else if (r.audit_failed()) {
    r.exit_code = 1;
  }
}

}  // namespace

RunResult run(const Options& o) {
  RunResult r;
  r.o = o;
  r.started_at = utc_now();
  r.machine = machine_summary();
  Collector col{o, {}};
  const int64_t t0 = now_ns() + 100'000'000;
  if (o.procs <= 1) {
    LocalFinal f = run_local(o, t0, [&](const Sample& s) { col.add(s); });
    finish_result(r, o, col, f);
    return r;
  }
  if (o.scenario == "ramp") throw std::runtime_error("ramp runs in one process (no --procs)");
  // Children: each owns channels g with g % procs == its index and reports through
  // a pipe; the parent only merges, prints and watches the server.
  std::vector<int> fds;
  std::vector<pid_t> pids;
  for (int p = 0; p < o.procs; ++p) {
    int fd[2];
    if (pipe(fd) != 0) throw std::runtime_error("pipe");
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork");
    if (pid == 0) {
      close(fd[0]);
      for (int q : fds) close(q);
      Options child = o;
      child.proc_index = p;
      PipeWriter out(fd[1]);
      LocalFinal f = run_local(child, t0, [&](const Sample& s) { out.sample(s); });
      out.final(f.counters, f.latencies, f.audit, f.own_cpu_s, f.load_end_t);
      _exit(0);
    }
    close(fd[1]);
    fds.push_back(fd[0]);
    pids.push_back(pid);
  }
  ProcMerger merger(o.procs);
  std::vector<PipeReader> readers;
  for (int fd : fds) readers.emplace_back(fd);
  size_t open = fds.size();
  while (open > 0) {
    std::vector<pollfd> pfds;
    for (size_t i = 0; i < readers.size(); ++i)
      if (!readers[i].eof()) pfds.push_back({readers[i].fd(), POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), 1000) < 0 && errno != EINTR) break;
    for (auto& pf : pfds) {
      if (!(pf.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      for (size_t i = 0; i < readers.size(); ++i) {
        if (readers[i].fd() != pf.fd) continue;
        readers[i].pump(int(i), merger);
        if (readers[i].eof()) --open;
      }
    }
    while (auto s = merger.next_complete()) col.add(std::move(*s));
  }
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  while (auto s = merger.next_complete(true)) col.add(std::move(*s));
  LocalFinal f;
  for (int p = 0; p < o.procs; ++p) {
    const ProcFinal& pf = merger.final_of(p);
    if (!pf.present) throw std::runtime_error(fmt::format("load process {} died", p));
    f.counters += pf.counters;
    f.latencies.merge(pf.latencies);
    f.audit.members_checked += pf.audit.members_checked;
    f.audit.channels_checked += pf.audit.channels_checked;
    f.audit.acked_msgs += pf.audit.acked_msgs;
    f.audit.expected_deliveries += pf.audit.expected_deliveries;
    f.own_cpu_s += pf.own_cpu_s;
    f.load_end_t = std::max(f.load_end_t, pf.load_end_t);
  }
  f.audit.lost = f.counters.lost;
  f.audit.duplicates = f.counters.duplicates;
  f.audit.reorders = f.counters.reorders;
  f.audit.mismatches = f.counters.mismatches + f.counters.history_mismatch;
  finish_result(r, o, col, f);
  return r;
}

}  // namespace bench
