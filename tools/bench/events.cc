#include "events.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

#include "histogram.h"
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

// Every acknowledged event: (p, off) -> sent at.
struct Ledger {
  std::mutex mu;
  std::map<std::pair<int64_t, int64_t>, int64_t> acked;
  uint64_t errors = 0;
};

struct GroupAudit {
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> got;
  uint64_t deliveries = 0, order_violations = 0, commits = 0, stale = 0;
  Histogram latency;
};

void produce(const Options& o, int index, std::atomic<bool>& stop, Ledger& ledger,
             std::atomic<uint64_t>& sent_events) {
  Wire w(o);
  const double per_s = o.rate / o.conns;
  const int batch = std::max(1, o.events_batch);
  std::atomic<int> inflight{0};
  std::mutex mu;
  std::unordered_map<int64_t, int64_t> sent_at;  // rid -> ns
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
      int64_t at = 0;
      {
        std::lock_guard lock(mu);
        at = sent_at[rid];
        sent_at.erase(rid);
      }
      --inflight;
      if (op != "emitted") {
        std::lock_guard lock(ledger.mu);
        ++ledger.errors;
        continue;
      }
      simdjson::dom::array offs;
      if (root["offs"].get_array().get(offs)) continue;
      std::lock_guard lock(ledger.mu);
      for (auto pair : offs) {
        int64_t p = pair.at(0).get_int64().value_unsafe(), off = pair.at(1).get_int64().value_unsafe();
        ledger.acked.emplace(std::make_pair(p, off), at);
      }
    }
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
    std::string f = fmt::format(R"({{"op":"emit","rid":{},"topic":"{}","events":[)", ++rid, o.topic);
    const int64_t t = now_ns();
    for (int i = 0; i < batch; ++i, ++n) {
      const uint64_t k = (n * 7919 + static_cast<uint64_t>(index) * 104729) % static_cast<uint64_t>(o.keys);
      if (i) f.push_back(',');
      f += fmt::format(
          R"({{"key":"player-{}","type":"score","id":"g{}-{}","body":{{"player":"player-{}","points":{},"round":"r{}","t":{}}}}})",
          k, index, n, k, n % 10, static_cast<int64_t>(std::chrono::duration<double>(Clock::now() - start).count() / 120), t);
    }
    f += "]}";
    {
      std::lock_guard lock(mu);
      sent_at[rid] = t;
    }
    ++inflight;
    if (!w.send(f)) break;
    sent_events += static_cast<uint64_t>(batch);
  }
  const auto until = Clock::now() + std::chrono::duration<double>(o.drain_s);
  while (inflight > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  w.shutdown_read();
  reader.join();
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
        audit.got.emplace(p, off);
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
}

}  // namespace

RunResult run_events(const Options& o) {
  RunResult r;
  r.o = o;
  Ledger ledger;
  std::vector<std::unique_ptr<GroupAudit>> audits;
  std::atomic<bool> stop_producers{false}, stop_consumers{false};
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> consumers, producers;
  for (int g = 0; g < o.groups; ++g) {
    audits.push_back(std::make_unique<GroupAudit>());
    for (int m = 0; m < o.members; ++m) {
      consumers.emplace_back([&, g] { consume(o, g, stop_consumers, *audits[g]); });
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // assignments settle
  const ProcStat s0 = o.server_pid ? read_proc(o.server_pid) : ProcStat{};
  const double cpu0 = self_cpu_s();
  const auto t0 = Clock::now();
  for (int i = 0; i < o.conns; ++i) {
    producers.emplace_back([&, i] {
      try {
        produce(o, i, stop_producers, ledger, sent);
      } catch (const std::exception& e) {
        fmt::print(stderr, "producer {}: {}\n", i, e.what());
      }
    });
  }
  uint64_t peak_rss = 0;
  for (int s = 0; s < static_cast<int>(o.duration_s); ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (o.server_pid) peak_rss = std::max(peak_rss, read_proc(o.server_pid).rss);
    if (o.progress) fmt::print(stderr, "t={}s sent={} acked={}\n", s + 1, sent.load(), [&] {
      std::lock_guard lock(ledger.mu);
      return ledger.acked.size();
    }());
  }
  stop_producers = true;
  for (auto& t : producers) t.join();
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const ProcStat s1 = o.server_pid ? read_proc(o.server_pid) : ProcStat{};
  // Every group gets until drain_s to receive everything acknowledged.
  const auto until = Clock::now() + std::chrono::duration<double>(o.drain_s);
  auto complete = [&] {
    for (auto& a : audits) {
      std::lock_guard lock(a->mu);
      if (a->got.size() < ledger.acked.size()) return false;
    }
    return true;
  };
  while (!complete() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop_consumers = true;
  for (auto& t : consumers) t.join();

  const size_t acked = ledger.acked.size();
  fmt::print("events: {} producers, {} groups x {} members, {:.0f} events/s asked, topic {}\n",
             o.conns, o.groups, o.members, o.rate, o.topic);
  fmt::print("  sent {}  acked {} ({:.0f}/s)  emit errors {}\n", sent.load(), acked,
             double(acked) / load_s, ledger.errors);
  bool ok = ledger.errors == 0 && acked > 0;
  for (size_t g = 0; g < audits.size(); ++g) {
    auto& a = *audits[g];
    size_t missing = 0;
    for (const auto& [po, at] : ledger.acked) missing += a.got.count(po) ? 0 : 1;
    fmt::print(
        "  group {}: received {} distinct, {} deliveries ({} redelivered), missing {}, order "
        "violations {}, commits {} (refused {}); emit->receive p50 {:.2f} ms p99 {:.2f} ms max {:.2f} ms\n",
        g, a.got.size(), a.deliveries, a.deliveries - a.got.size(), missing, a.order_violations,
        a.commits, a.stale, a.latency.percentile(50) / 1e6, a.latency.percentile(99) / 1e6,
        double(a.latency.max()) / 1e6);
    ok = ok && missing == 0 && a.order_violations == 0;
  }
  if (o.server_pid) {
    fmt::print("  server: cpu {:.2f} s over {:.1f} s load ({:.0f} %), rss {:.1f} MiB now, peak {:.1f} MiB\n",
               s1.cpu_s - s0.cpu_s, load_s, 100 * (s1.cpu_s - s0.cpu_s) / load_s,
               double(s1.rss) / (1 << 20), double(std::max(peak_rss, s1.rss)) / (1 << 20));
  }
  fmt::print("  generator cpu {:.2f} s; audit {}\n", self_cpu_s() - cpu0, ok ? "clean" : "FAILED");
  r.exit_code = ok ? 0 : 1;
  return r;
}

}  // namespace bench
