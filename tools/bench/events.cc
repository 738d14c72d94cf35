#include "events.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "event_shape.h"
#include "events_ledger.h"
#include "histogram.h"
#include "pipeline_audit.h"
#include "redis_streams.h"
#include "procstat.h"

namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A blocking connection speaking the length-prefixed framing.
class Wire {
 public:
  explicit Wire(const Options& o) {
    if (!o.unix_path.empty()) {
      fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::strncpy(a.sun_path, o.unix_path.c_str(), sizeof(a.sun_path) - 1);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        throw std::runtime_error("cannot connect to " + o.unix_path);
      }
    } else {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(o.port));
      ::inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        throw std::runtime_error(fmt::format("cannot connect to {}:{}", o.host, o.port));
      }
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    send(R"({"op":"hello","v":1,"api_key":")" + o.api_key + R"("})");
    std::string w;
    if (!read(w) || w.find("\"welcome\"") == std::string::npos) {
      throw std::runtime_error("hello refused: " + w);
    }
  }
  ~Wire() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_read() { ::shutdown(fd_, SHUT_RDWR); }
  bool send(const std::string& json) {
    std::string f(4, '\0');
    const auto n = static_cast<uint32_t>(json.size());
    f[0] = char(n >> 24), f[1] = char(n >> 16), f[2] = char(n >> 8), f[3] = char(n);
    f += json;
    std::lock_guard lock(write_mu_);
    for (size_t at = 0; at < f.size();) {
      const ssize_t w = ::send(fd_, f.data() + at, f.size() - at, MSG_NOSIGNAL);
      if (w <= 0) return false;
      at += static_cast<size_t>(w);
    }
    return true;
  }
  // The next frame; false on close.
  bool read(std::string& out) {
    for (;;) {
      if (buf_.size() - at_ >= 4) {
        const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + at_);
        const uint32_t n = uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
        if (buf_.size() - at_ - 4 >= n) {
          out.assign(buf_, at_ + 4, n);
          at_ += 4 + n;
          if (at_ > (1 << 20)) {
            buf_.erase(0, at_);
            at_ = 0;
          }
          return true;
        }
      }
      char tmp[65536];
      const ssize_t r = ::recv(fd_, tmp, sizeof tmp, 0);
      if (r <= 0) return false;
      buf_.append(tmp, static_cast<size_t>(r));
    }
  }

 private:
  int fd_ = -1;
  std::mutex write_mu_;
  std::string buf_;
  size_t at_ = 0;
};

struct Pending {
  int64_t t = 0;
  std::string round;
  std::vector<uint32_t> keys;
  std::vector<uint8_t> points;
};

// Every acknowledged event and the board recomputed from them.
struct Ledger {
  std::mutex mu;
  OffsetSet acked;
  BoardTally tally;
  uint64_t errors = 0, dups = 0;
  double producer_cpu_s = 0;
};

// Board pushes as a watcher of lb:<board>:<round> saw them.
struct PushLog {
  std::mutex mu;
  std::map<std::string, std::vector<int64_t>> at;  // round -> arrival (steady ns)
  std::string error;
};

std::string round_name(const Options& o, int64_t i) { return fmt::format("{}-{}", o.run_id, i); }

void produce(const Options& o, int index, int64_t t0, std::atomic<bool>& stop, Ledger& ledger,
             std::atomic<uint64_t>& sent_events) {
  Wire w(o);
  const double per_s = o.rate / o.conns;
  const int batch = std::max(1, o.events_batch);
  std::atomic<int> inflight{0};
  std::mutex mu;
  std::unordered_map<int64_t, Pending> pending;  // by rid
  double reader_cpu = 0;
  std::thread reader([&] {
    thread_local simdjson::dom::parser parser;
    std::string f;
    while (w.read(f)) {
      simdjson::dom::element root;
      if (parser.parse(f).get(root)) continue;
      std::string_view op;
      if (root["op"].get_string().get(op)) continue;
      int64_t rid = 0;
      if (root["rid"].get_int64().get(rid)) rid = 0;
      Pending sent;
      {
        std::lock_guard lock(mu);
        auto it = pending.find(rid);
        if (it != pending.end()) {
          sent = std::move(it->second);
          pending.erase(it);
        }
      }
      --inflight;
      simdjson::dom::array offs, dup;
      if (op != "emitted" || root["offs"].get_array().get(offs) || root["dup"].get_array().get(dup)) {
        std::lock_guard lock(ledger.mu);
        ++ledger.errors;
        continue;
      }
      std::lock_guard lock(ledger.mu);
      size_t i = 0;
      auto d = dup.begin();
      for (auto pair : offs) {
        const int64_t p = pair.at(0).get_int64().value_unsafe();
        const int64_t off = pair.at(1).get_int64().value_unsafe();
        const bool is_dup = d != dup.end() && (*d).get_bool().value_unsafe();
        if (d != dup.end()) ++d;
        if (ledger.acked.add(static_cast<uint32_t>(p), static_cast<uint64_t>(off)) && !is_dup &&
            i < sent.keys.size()) {
          ledger.tally.add(sent.round, fmt::format("player-{}", sent.keys[i]), sent.points[i]);
        } else {
          ++ledger.dups;
        }
        ++i;
      }
    }
    reader_cpu = thread_cpu_s();
  });
  const auto start = Clock::now();
  int64_t rid = 0;
  uint64_t n = 0;
  while (!stop) {
    // Paced: event n is due at n / per_s seconds after the start.
    const auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(double(n) * 1e9 / per_s));
    if (Clock::now() < due) {
      std::this_thread::sleep_until(due);
      continue;
    }
    if (inflight >= 16) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    const int64_t t = now_ns();
    Pending pend;
    pend.t = t;
    pend.round = round_name(o, static_cast<int64_t>(double(t - t0) / 1e9 / o.round_s));
    std::string f = fmt::format(R"({{"op":"emit","rid":{},"topic":"{}","events":[)", ++rid, o.topic);
    for (int i = 0; i < batch; ++i, ++n) {
      const uint32_t k = event_key(n, index, o.keys);
      const int points = event_points(n);
      pend.keys.push_back(k);
      pend.points.push_back(static_cast<uint8_t>(points));
      if (i) f.push_back(',');
      if (o.event_ids) {
        fmt::format_to(std::back_inserter(f), R"({{"key":"player-{}","type":"score","id":"g{}-{}","body":)", k,
                       index, n);
      } else {
        fmt::format_to(std::back_inserter(f), R"({{"key":"player-{}","type":"score","body":)", k);
      }
      append_body(f, k, points, pend.round, t);
      f.push_back('}');
    }
    f += "]}";
    {
      std::lock_guard lock(mu);
      pending[rid] = std::move(pend);
    }
    ++inflight;
    if (!w.send(f)) break;
    sent_events += static_cast<uint64_t>(batch);
  }
  const auto until = Clock::now() + std::chrono::duration<double>(o.drain_s);
  while (inflight > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  w.shutdown_read();
  reader.join();
  std::lock_guard lock(ledger.mu);
  ledger.producer_cpu_s += thread_cpu_s() + reader_cpu;
}

void consume(const Options& o, int group, std::atomic<bool>& stop, GroupAudit& audit) {
  Wire w(o);
  const std::string gname = fmt::format("bench-g{}", group);
  w.send(fmt::format(R"({{"op":"consume","rid":"c","topic":"{}","group":"{}"}})", o.topic, gname));
  std::thread closer([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w.shutdown_read();
  });
  simdjson::dom::parser parser;
  std::string f;
  int64_t gen = 0, rid = 0;
  std::map<int64_t, int64_t> expected;
  while (w.read(f)) {
    simdjson::dom::element root;
    if (parser.parse(f).get(root)) continue;
    std::string_view op;
    if (root["op"].get_string().get(op)) continue;
    if (op == "assigned") {
      gen = root["gen"].get_int64().value_unsafe();
      expected.clear();
      simdjson::dom::array parts;
      if (root["parts"].get_array().get(parts)) continue;
      for (auto part : parts) {
        expected[part["p"].get_int64().value_unsafe()] = part["next"].get_int64().value_unsafe();
      }
    } else if (op == "revoked") {
      expected.clear();
    } else if (op == "events") {
      const int64_t p = root["p"].get_int64().value_unsafe();
      const int64_t now = now_ns();
      int64_t last = -1;
      std::lock_guard lock(audit.mu);
      simdjson::dom::array evs;
      if (root["evs"].get_array().get(evs)) continue;
      for (auto e : evs) {
        const int64_t off = e["off"].get_int64().value_unsafe();
        auto it = expected.find(p);
        if (it == expected.end() || off != it->second) ++audit.order_violations;
        if (it != expected.end()) it->second = off + 1;
        int64_t t = 0;
        if (!e["body"]["t"].get_int64().get(t)) audit.latency.record(now - t);
        audit.got.add(static_cast<uint32_t>(p), static_cast<uint64_t>(off));
        ++audit.deliveries;
        last = off;
      }
      if (last >= 0) {
        w.send(fmt::format(R"({{"op":"commit","rid":{},"topic":"{}","group":"{}","gen":{},"p":{},"off":{}}})",
                           ++rid, o.topic, gname, gen, p, last));
      }
    } else if (op == "committed") {
      std::lock_guard lock(audit.mu);
      ++audit.commits;
    } else if (op == "error") {
      std::lock_guard lock(audit.mu);
      ++audit.stale;
    }
  }
  closer.join();
  std::lock_guard lock(audit.mu);
  audit.cpu_s += thread_cpu_s();
}

// Joins lb:<board>:<round> of every round the run will have and notes when
// each board push arrives.
void watch_boards(const Options& o, int rounds, std::atomic<bool>& stop, PushLog& log) {
  Wire w(o);
  for (int r = 0; r < rounds; ++r) {
    w.send(fmt::format(R"({{"op":"join","rid":{},"ch":"lb:{}:{}"}})", r + 1, o.board, round_name(o, r)));
  }
  std::thread closer([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w.shutdown_read();
  });
  simdjson::dom::parser parser;
  std::string f;
  while (w.read(f)) {
    const int64_t now = now_ns();
    simdjson::dom::element root;
    if (parser.parse(f).get(root)) continue;
    std::string_view op, round;
    if (root["op"].get_string().get(op)) continue;
    if (op == "board" && !root["round"].get_string().get(round)) {
      std::lock_guard lock(log.mu);
      log.at[std::string(round)].push_back(now);
    } else if (op == "error") {
      std::lock_guard lock(log.mu);
      if (log.error.empty()) log.error = f;
    }
  }
  closer.join();
}

struct BoardAudit {
  uint64_t checked = 0, wrong_score = 0, wrong_rank = 0, absent = 0;
  std::string first_mismatch, error;
};

// Reads every recomputed member's entry back with `rank` (around 0, pipelined)
// and compares score and rank.
BoardAudit audit_board(const Options& o, const BoardTally& tally) {
  BoardAudit a;
  Wire w(o);
  simdjson::dom::parser parser;
  std::string f;
  for (const auto& [round, members] : tally.rounds) {
    const auto want = tally.ranked(round);
    std::vector<const std::string*> names;
    for (const auto& [m, sr] : want) names.push_back(&m);
    constexpr size_t kWindow = 512;
    size_t sent = 0, got = 0;
    while (got < names.size()) {
      while (sent < names.size() && sent - got < kWindow) {
        w.send(fmt::format(R"({{"op":"rank","rid":{},"board":"{}","member":"{}","around":0,"round":"{}"}})",
                           sent, o.board, *names[sent], round));
        ++sent;
      }
      if (!w.read(f)) {
        a.error = "connection closed during the board audit";
        return a;
      }
      simdjson::dom::element root;
      std::string_view op;
      int64_t rid = 0;
      if (parser.parse(f).get(root) || root["op"].get_string().get(op) || root["rid"].get_int64().get(rid) ||
          rid < 0 || static_cast<size_t>(rid) >= names.size()) {
        continue;
      }
      ++got;
      if (op != "ranks") {
        a.error = f;
        return a;
      }
      const std::string& m = *names[static_cast<size_t>(rid)];
      const auto& [score, rank] = want.at(m);
      ++a.checked;
      bool found = false;
      simdjson::dom::array entries;
      if (!root["entries"].get_array().get(entries)) {
        for (auto e : entries) {
          std::string_view em;
          if (e["m"].get_string().get(em) || em != m) continue;
          found = true;
          double s = 0;
          int64_t r = 0;
          if (e["s"].get_double().get(s)) s = e["s"].get_int64().value_unsafe();
          r = e["r"].get_int64().value_unsafe();
          if (s != score) ++a.wrong_score;
          if (static_cast<uint64_t>(r) != rank) ++a.wrong_rank;
          if ((s != score || static_cast<uint64_t>(r) != rank) && a.first_mismatch.empty()) {
            a.first_mismatch = fmt::format("round {} {}: server s={} r={}, recomputed s={} r={}", round, m, s,
                                           r, score, rank);
          }
        }
      }
      if (!found) {
        ++a.absent;
        if (a.first_mismatch.empty()) a.first_mismatch = fmt::format("round {} {}: absent ({})", round, m, f);
      }
    }
  }
  return a;
}

void print_intervals(const Options& o, double t0_s, const PushLog& log) {
  // Intervals between consecutive pushes of a round while producers were
  // emitting into it (a watcher joined at the start gets one push per round
  // at once: the gap from it to the round's start is not an interval).
  Histogram h;
  uint64_t inside = 0, n = 0;
  for (const auto& [round, at] : log.at) {
    const auto dash = round.rfind('-');
    const double r = std::stod(round.substr(dash + 1));
    const double from = t0_s + r * o.round_s, to = std::min(t0_s + (r + 1) * o.round_s, t0_s + o.duration_s);
    for (size_t i = 1; i < at.size(); ++i) {
      const double a = double(at[i - 1]) / 1e9, b = double(at[i]) / 1e9;
      if (a < from || b > to) continue;
      const int64_t d = at[i] - at[i - 1];
      h.record(d);
      ++n;
      if (d >= 180'000'000 && d <= 220'000'000) ++inside;
    }
  }
  if (!log.error.empty()) fmt::print("  board pushes: {}\n", log.error);
  if (n == 0) {
    fmt::print("  board pushes: no intervals seen (board {} configured?)\n", o.board);
    return;
  }
  fmt::print(
      "  board push intervals ({} pushes' gaps over {} rounds): min {:.1f} p1 {:.1f} p50 {:.1f} p99 {:.1f} "
      "max {:.1f} ms; {} of {} ({:.2f} %) within 200 +/- 20 ms\n",
      n, log.at.size(), 0.0 + double(h.percentile(0.0001)) / 1e6, double(h.percentile(1)) / 1e6,
      double(h.percentile(50)) / 1e6, double(h.percentile(99)) / 1e6, double(h.max()) / 1e6, inside, n,
      100.0 * double(inside) / double(n));
}

void print_figures(const PipelineFigures& f) {
  fmt::print(
      "  {}: acked {:.0f}/s, missing {}, order violations {}, emit->receive p50 {:.2f} ms p99 {:.2f} ms "
      "max {:.2f} ms; cpu: server {:.2f} s ({:.0f} %), workers {:.2f} s, producers {:.2f} s; peak rss {:.1f} MiB\n",
      f.name, double(f.acked) / f.load_s, f.missing, f.order_violations, f.latency.percentile(50) / 1e6,
      f.latency.percentile(99) / 1e6, double(f.latency.max()) / 1e6, f.server_cpu_s,
      100 * f.server_cpu_s / f.load_s, f.worker_cpu_s, f.producer_cpu_s, double(f.server_peak_rss) / (1 << 20));
}

}  // namespace

RunResult run_events(const Options& o) {
  RunResult r;
  r.o = o;
  Ledger ledger;
  GroupAudits audits;
  PushLog pushes;
  std::atomic<bool> stop_producers{false}, stop_consumers{false};
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> consumers, producers;
  for (int g = 0; g < o.groups; ++g) {
    audits.push_back(std::make_unique<GroupAudit>());
    for (int m = 0; m < o.members; ++m) {
      consumers.emplace_back([&, g] { consume(o, g, stop_consumers, *audits[g]); });
    }
  }
  const int rounds = static_cast<int>(std::ceil(o.duration_s / o.round_s)) + 1;
  std::thread watcher;
  if (!o.board.empty()) watcher = std::thread([&] { watch_boards(o, rounds, stop_consumers, pushes); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // assignments settle
  const ProcStat s0 = o.server_pid ? read_proc(o.server_pid) : ProcStat{};
  const double cpu0 = self_cpu_s();
  const auto t0 = Clock::now();
  const int64_t t0_ns = now_ns();
  fmt::print("events: {}\n", machine_summary());
  for (int i = 0; i < o.conns; ++i) {
    producers.emplace_back([&, i] {
      try {
        produce(o, i, t0_ns, stop_producers, ledger, sent);
      } catch (const std::exception& e) {
        fmt::print(stderr, "producer {}: {}\n", i, e.what());
      }
    });
  }
  const uint64_t peak_rss = sample_load(o, o.server_pid, [&](int s) {
    fmt::print(stderr, "t={}s sent={} acked={}\n", s, sent.load(), [&] {
      std::lock_guard lock(ledger.mu);
      return ledger.acked.distinct();
    }());
  });
  stop_producers = true;
  for (auto& t : producers) t.join();
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const ProcStat s1 = o.server_pid ? read_proc(o.server_pid) : ProcStat{};
  // Every group gets until drain_s to receive everything acknowledged.
  wait_received(o, ledger.acked, audits);
  // One more interval so that the final pushes land before the watcher stops.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop_consumers = true;
  for (auto& t : consumers) t.join();
  if (watcher.joinable()) watcher.join();

  const uint64_t acked = ledger.acked.distinct();
  fmt::print("events: {} producers, {} groups x {} members, {:.0f} events/s asked for {:.0f} s, topic {}\n",
             o.conns, o.groups, o.members, o.rate, o.duration_s, o.topic);
  fmt::print("  sent {}  acked {} ({:.0f}/s)  emit errors {}  duplicates {}\n", sent.load(), acked,
             double(acked) / load_s, ledger.errors, ledger.dups);
  bool ok = ledger.errors == 0 && acked > 0;
  PipelineFigures parley;
  parley.name = "parley";
  parley.ran = true;
  parley.load_s = load_s;
  parley.sent = sent.load();
  parley.acked = acked;
  add_groups(parley, ledger.acked, audits, [](size_t g, const GroupAudit& a, uint64_t missing) {
    fmt::print(
        "  group {}: received {} distinct, {} deliveries ({} redelivered), missing {}, order "
        "violations {}, commits {} (refused {}); emit->receive p50 {:.2f} ms p99 {:.2f} ms max {:.2f} ms\n",
        g, a.got.distinct(), a.deliveries, a.deliveries - a.got.distinct(), missing, a.order_violations,
        a.commits, a.stale, a.latency.percentile(50) / 1e6, a.latency.percentile(99) / 1e6,
        double(a.latency.max()) / 1e6);
  });
  ok = ok && parley.missing == 0 && parley.order_violations == 0;
  parley.producer_cpu_s = ledger.producer_cpu_s;
  if (!o.board.empty()) {
    print_intervals(o, double(t0_ns) / 1e9, pushes);
    const BoardAudit b = audit_board(o, ledger.tally);
    fmt::print("  leaderboard {}: {} members over {} rounds read back with rank: {} wrong scores, {} wrong ranks, "
               "{} absent{}{}\n",
               o.board, b.checked, ledger.tally.rounds.size(), b.wrong_score, b.wrong_rank, b.absent,
               b.first_mismatch.empty() ? "" : "; first: " + b.first_mismatch,
               b.error.empty() ? "" : "; error: " + b.error);
    ok = ok && b.error.empty() && b.checked > 0 && b.wrong_score == 0 && b.wrong_rank == 0 && b.absent == 0;
  }
  if (o.server_pid) {
    parley.server_cpu_s = s1.cpu_s - s0.cpu_s;
    parley.server_peak_rss = std::max(peak_rss, s1.rss);
    fmt::print("  server: cpu {:.2f} s over {:.1f} s load ({:.0f} %), rss {:.1f} MiB now, peak {:.1f} MiB\n",
               s1.cpu_s - s0.cpu_s, load_s, 100 * (s1.cpu_s - s0.cpu_s) / load_s,
               double(s1.rss) / (1 << 20), double(parley.server_peak_rss) / (1 << 20));
  }
  fmt::print("  generator cpu {:.2f} s (producers {:.2f}, consumers {:.2f}); audit {}\n", self_cpu_s() - cpu0,
             parley.producer_cpu_s, parley.worker_cpu_s, ok ? "clean" : "FAILED");
  if (!o.redis_bin.empty()) {
    fmt::print("redis streams, the same load:\n");
    const PipelineFigures redis = run_redis_streams(o, o.partitions);
    if (!redis.ran) {
      fmt::print("  redis streams: not run: {}\n", redis.error);
      ok = false;
    } else {
      print_figures(parley);
      print_figures(redis);
      auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
      fmt::print(
          "  redis / parley: p50 {:.2f}x, p99 {:.2f}x; cpu per event {:.2f}x (redis-server + workers {:.2f} s "
          "vs parley server {:.2f} s + consumers {:.2f} s)\n",
          ratio(redis.latency.percentile(50), parley.latency.percentile(50)),
          ratio(redis.latency.percentile(99), parley.latency.percentile(99)),
          ratio((redis.server_cpu_s + redis.worker_cpu_s) / double(std::max<uint64_t>(redis.acked, 1)),
                (parley.server_cpu_s + parley.worker_cpu_s) / double(std::max<uint64_t>(parley.acked, 1))),
          redis.server_cpu_s + redis.worker_cpu_s, parley.server_cpu_s, parley.worker_cpu_s);
      ok = ok && redis.missing == 0 && redis.order_violations == 0 && redis.errors == 0;
    }
  }
  fmt::print("events: audit {}\n", ok ? "clean" : "FAILED");
  r.exit_code = ok ? 0 : 1;
  return r;
}

}  // namespace bench
