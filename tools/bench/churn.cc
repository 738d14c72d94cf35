#include "churn.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <deque>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "procstat.h"
#include "token.h"
#include "ws_codec.h"

namespace bench {
namespace {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Shared {
  const Options& o;
  std::atomic<uint64_t> next_channel{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> joins{0}, acked{0}, dup_acks{0}, leaves{0}, pubs{0}, errors{0},
      failed_conns{0};
};

// One blocking WebSocket client: keeps `depth` channels in flight, each a join, its
// pubs and a leave sent together (the server handles one connection's ops in order),
// and starts the next channel when a `left` arrives.
class ChurnClient {
 public:
  ChurnClient(Shared& s, int index) : s_(s), index_(index) {}
  ~ChurnClient() {
    if (fd_ >= 0) close(fd_);
  }

  void run() {
    if (!connect_ws()) {
      ++s_.failed_conns;
      return;
    }
    std::string out;
    for (int i = 0; i < s_.o.churn_depth; ++i) start_channel(out);
    if (!send_all(out)) return fail("send");
    // A `left` can overtake the acks of the channel's pubs (an ack waits for the
    // store, the leave does not): done when every channel is left and every pub acked.
    while (in_flight_ > 0 || acks_ < pubs_) {
      if (!read_frames()) return fail("read");
      out.clear();
      while (started_ < finished_ + uint64_t(s_.o.churn_depth) && start_channel(out)) {
      }
      if (!out.empty() && !send_all(out)) return fail("send");
    }
  }

 private:
  void fail(const char* what) {
    if (s_.errors.fetch_add(1) < 3) fmt::print(stderr, "churn client {}: {} failed\n", index_, what);
  }

  // Appends the frames of one fresh channel; false when none is left to start.
  bool start_channel(std::string& out) {
    if (s_.stop.load(std::memory_order_relaxed)) return false;
    const uint64_t g = s_.next_channel.fetch_add(1);
    if (g >= uint64_t(s_.o.churn_channels)) return false;
    const std::string ch = fmt::format("{}:{}.ch{}", s_.o.ns, s_.o.run_id, g);
    frame(out, fmt::format(R"({{"op":"join","rid":0,"ch":"{}"}})", ch));
    for (int k = 0; k < s_.o.churn_msgs; ++k) {
      frame(out, fmt::format(R"({{"op":"pub","rid":1,"ch":"{}","id":"{}","body":{{"p":"{}"}}}})",
                             ch, g * 1000 + uint64_t(k), s_.o.churn_body));
      ++s_.pubs;
      ++pubs_;
    }
    frame(out, fmt::format(R"({{"op":"leave","rid":2,"ch":"{}"}})", ch));
    ++started_;
    ++in_flight_;
    return true;
  }

  void frame(std::string& out, const std::string& json) {
    ws::append_frame(out, ws::kText, json, 0x5a3c9e17u ^ uint32_t(out.size()));
  }

  bool send_all(const std::string& b) {
    size_t at = 0;
    while (at < b.size()) {
      ssize_t n = ::send(fd_, b.data() + at, b.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += size_t(n);
    }
    return true;
  }

  bool connect_ws() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(s_.o.port));
    if (inet_pton(AF_INET, s_.o.host.c_str(), &a.sin_addr) != 1) return false;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    const std::string key = base64(fmt::format("churn-key-{:06}", index_).substr(0, 16));
    if (!send_all(ws::handshake_request(s_.o.host, s_.o.ws_path, key))) return false;
    std::string head;
    char c;
    while (head.size() < 8192 && head.find("\r\n\r\n") == std::string::npos) {
      if (::recv(fd_, &c, 1, 0) != 1) return false;
      head.push_back(c);
    }
    if (!ws::check_handshake_response(head, key).empty()) return false;
    const std::string token = mint_token(s_.o.secret, s_.o.tenant, fmt::format("churn{}", index_),
                                         std::time(nullptr) + 24 * 3600);
    std::string hello;
    frame(hello, fmt::format(R"({{"op":"hello","v":1,"rid":0,"token":"{}"}})", token));
    if (!send_all(hello)) return false;
    welcomed_ = false;
    while (!welcomed_) {
      if (!read_frames()) return false;
    }
    return true;
  }

  // Reads what the socket has and handles every complete frame.
  bool read_frames() {
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, size_t(n));
    size_t at = 0;
    for (;;) {
      ws::FrameHeader h;
      if (!ws::parse_header(buf_.data() + at, buf_.size() - at, h)) break;
      if (buf_.size() - at < h.header_len + h.payload_len) break;
      if (h.op == ws::kText) on_message(std::string_view(buf_.data() + at + h.header_len, h.payload_len));
      if (h.op == ws::kClose) return false;
      at += h.header_len + h.payload_len;
    }
    buf_.erase(0, at);
    return true;
  }

  void on_message(std::string_view json) {
    // Server frames are one object or a tick batch; the churn only needs the ops.
    simdjson::padded_string p(json);
    simdjson::ondemand::document doc;
    if (parser_.iterate(p).get(doc)) return;
    auto handle = [&](simdjson::ondemand::object obj) {
      std::string_view op;
      if (obj["op"].get_string().get(op)) return;
      if (op == "welcome") {
        welcomed_ = true;
      } else if (op == "joined") {
        ++s_.joins;
      } else if (op == "ack") {
        bool dup = false;
        if (!obj["dup"].get_bool().get(dup) && dup) ++s_.dup_acks;
        ++s_.acked;
        ++acks_;
      } else if (op == "left") {
        ++s_.leaves;
        ++finished_;
        --in_flight_;
      } else if (op == "error") {
        ++s_.errors;
      }
    };
    simdjson::ondemand::array arr;
    if (!doc.get_array().get(arr)) {
      for (auto v : arr) {
        simdjson::ondemand::object o;
        if (!v.get_object().get(o)) handle(o);
      }
    } else {
      simdjson::ondemand::object o;
      if (!doc.get_object().get(o)) handle(o);
    }
  }

  Shared& s_;
  int index_;
  int fd_ = -1;
  std::string buf_;
  simdjson::ondemand::parser parser_;
  bool welcomed_ = false;
  uint64_t started_ = 0, finished_ = 0, pubs_ = 0, acks_ = 0;
  int in_flight_ = 0;
};

}  // namespace

RunResult run_churn(const Options& o) {
  RunResult r;
  r.o = o;
  r.machine = machine_summary();
  {
    std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    r.started_at = buf;
  }
  Shared s{o};
  const int64_t t0 = mono_ns();
  const double cpu0 = self_cpu_s();
  std::vector<std::thread> threads;
  std::atomic<int> running{o.conns};
  for (int i = 0; i < o.conns; ++i) {
    threads.emplace_back([&s, &running, i] {
      ChurnClient c(s, i);
      c.run();
      --running;
    });
  }
  auto sample = [&](double t) {
    Sample x;
    x.t = t;
    x.total.joins = s.joins;
    x.total.acked = s.acked;
    x.total.dup_acks = s.dup_acks;
    x.total.leaves = s.leaves;
    x.total.pub_sent = x.total.pub_attempted = s.pubs;
    x.total.other_errors = s.errors;
    x.total.conn_failed = s.failed_conns;
    x.total.conn_ready = uint64_t(o.conns) - s.failed_conns;
    x.own_cpu_s = self_cpu_s() - cpu0;
    if (o.server_pid > 0) {
      ProcStat ps = read_proc(o.server_pid);
      if (ps.ok) {
        x.server_cpu_s = ps.cpu_s;
        x.server_rss = ps.rss;
      }
    }
    if (o.progress) {
      const Sample* prev = r.samples.empty() ? nullptr : &r.samples.back();
      const double dt = prev ? t - prev->t : t;
      fmt::print(stderr, "[{:5.0f}s] channels {} ({:.0f}/s) acks {} errors {} srv rss {:.1f} MiB cpu {:.0f}%\n",
                 t, x.total.leaves,
                 prev && dt > 0 ? double(x.total.leaves - prev->total.leaves) / dt : 0.0,
                 x.total.acked, x.total.other_errors, double(x.server_rss) / 1048576.0,
                 prev && dt > 0 && x.server_cpu_s >= 0 ? 100 * (x.server_cpu_s - prev->server_cpu_s) / dt : 0.0);
    }
    r.samples.push_back(x);
  };
  sample(0);
  const int64_t load_end = t0 + int64_t(o.duration_s * 1e9);
  int k = 1;
  while (running.load() > 0) {
    const int64_t due = t0 + int64_t(k) * 1'000'000'000;
    while (mono_ns() < due && running.load() > 0) usleep(20'000);
    if (mono_ns() >= load_end) s.stop = true;
    if (mono_ns() >= due) sample(double(k++));
  }
  for (auto& t : threads) t.join();
  r.load_start_t = 0;
  r.load_end_t = double(mono_ns() - t0) / 1e9;
  sample(r.load_end_t);
  // Idle after the churn: the server unloads and forgets the channels; keep sampling
  // its RSS to see it come back down.
  for (int i = 1; i <= int(o.churn_idle_s); ++i) {
    usleep(1'000'000);
    sample(r.load_end_t + i);
  }
  r.counters = r.samples.back().total;
  r.at_load_start = r.samples.front().total;
  r.at_load_end = r.counters;
  r.own_cpu_s = self_cpu_s() - cpu0;
  if (o.server_pid > 0) {
    ProcStat ps = read_proc(o.server_pid);
    if (ps.ok) {
      r.server_peak_rss = ps.peak_rss;
      r.server_cpu_total_s = ps.cpu_s;
    }
    r.server_gone = !ps.ok || !ps.alive;
    if (!r.samples.empty() && r.samples.front().server_cpu_s >= 0)
      r.server_cpu_s = r.samples.back().server_cpu_s - r.samples.front().server_cpu_s;
  }
  const uint64_t want = r.counters.pub_sent;
  // The server's death first, as in runner.cc.
  if (r.server_gone) {
    r.exit_code = 4;
  } else if (r.counters.conn_ready == 0 || r.counters.leaves == 0) {
    r.exit_code = 3;
  } else if (r.counters.acked != want || r.counters.other_errors > 0) {
    // Every pub acked, nothing refused.
    r.exit_code = 1;
  }
  fmt::print("churn: {} channels ({} msgs each), {} acks ({} dup), {} errors in {:.1f} s; "
             "server rss first {:.1f} MiB, peak {:.1f} MiB, last {:.1f} MiB\n",
             r.counters.leaves, o.churn_msgs, r.counters.acked, r.counters.dup_acks,
             r.counters.other_errors, r.load_end_t, double(r.samples.front().server_rss) / 1048576.0,
             double(r.server_peak_rss) / 1048576.0, double(r.samples.back().server_rss) / 1048576.0);
  return r;
}

}  // namespace bench
