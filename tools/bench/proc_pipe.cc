#include "proc_pipe.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

namespace bench {

namespace {

void put_counters(std::string& out, const Counters& c) {
#define BENCH_PUT(name) fmt::format_to(std::back_inserter(out), " {}", c.name);
  BENCH_COUNTERS(BENCH_PUT)
#undef BENCH_PUT
}

void get_counters(std::istringstream& in, Counters& c) {
#define BENCH_GET(name) in >> c.name;
  BENCH_COUNTERS(BENCH_GET)
#undef BENCH_GET
}

void put_hist(std::string& out, const Histogram& h) {
  auto sp = h.sparse();
  fmt::format_to(std::back_inserter(out), " {} {} {}", h.max(), h.sum(), sp.size());
  for (auto [i, n] : sp) fmt::format_to(std::back_inserter(out), " {} {}", i, n);
}

void get_hist(std::istringstream& in, Histogram& h) {
  uint64_t max = 0, sum = 0;
  size_t n = 0;
  in >> max >> sum >> n;
  std::vector<std::pair<uint32_t, uint64_t>> sp(n);
  for (auto& [i, c] : sp) in >> i >> c;
  h.add_sparse(sp, max, sum);
}

void put_lat(std::string& out, const Latencies& l) {
  put_hist(out, l.ack);
  put_hist(out, l.delivery);
  put_hist(out, l.state);
  put_hist(out, l.send_lag);
  put_hist(out, l.tick_interval);
  put_hist(out, l.tick_dev);
}

void get_lat(std::istringstream& in, Latencies& l) {
  get_hist(in, l.ack);
  get_hist(in, l.delivery);
  get_hist(in, l.state);
  get_hist(in, l.send_lag);
  get_hist(in, l.tick_interval);
  get_hist(in, l.tick_dev);
}

}  // namespace

void PipeWriter::write_line(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n <= 0) return;
    off += size_t(n);
  }
}

void PipeWriter::sample(const Sample& s) {
  std::string line = fmt::format("S {} {} {}", s.t, s.rate, s.own_cpu_s);
  put_counters(line, s.total);
  put_lat(line, s.interval);
  line += '\n';
  write_line(line);
}

void PipeWriter::final(const Counters& c, const Latencies& l, const AuditResult& a,
                       double own_cpu_s, double load_end_t) {
  std::string line = fmt::format("F {} {} {} {} {} {}", own_cpu_s, load_end_t,
                                 a.members_checked, a.channels_checked, a.acked_msgs,
                                 a.expected_deliveries);
  put_counters(line, c);
  put_lat(line, l);
  line += '\n';
  write_line(line);
}

void PipeReader::pump(int proc, ProcMerger& m) {
  char tmp[65536];
  ssize_t n = ::read(fd_, tmp, sizeof tmp);
  if (n <= 0) {
    eof_ = true;
    ::close(fd_);
    return;
  }
  buf_.append(tmp, size_t(n));
  size_t start = 0, nl;
  while ((nl = buf_.find('\n', start)) != std::string::npos) {
    std::istringstream in(buf_.substr(start, nl - start));
    start = nl + 1;
    char kind = 0;
    in >> kind;
    if (kind == 'S') {
      Sample s;
      in >> s.t >> s.rate >> s.own_cpu_s;
      get_counters(in, s.total);
      get_lat(in, s.interval);
      m.add_sample(proc, std::move(s));
    } else if (kind == 'F') {
      ProcFinal f;
      f.present = true;
      in >> f.own_cpu_s >> f.load_end_t >> f.audit.members_checked >> f.audit.channels_checked >>
          f.audit.acked_msgs >> f.audit.expected_deliveries;
      get_counters(in, f.counters);
      get_lat(in, f.latencies);
      m.set_final(proc, std::move(f));
    }
  }
  buf_.erase(0, start);
}

std::optional<Sample> ProcMerger::next_complete(bool flush) {
  bool any = false;
  for (auto& v : per_) {
    if (v.size() > next_) any = true;
    else if (!flush) return std::nullopt;
  }
  if (!any) return std::nullopt;
  Sample out;
  for (auto& v : per_) {
    if (v.empty()) continue;
    const Sample& s = v.size() > next_ ? v[next_] : v.back();
    out.total += s.total;
    out.own_cpu_s += s.own_cpu_s;
    out.rate = std::max(out.rate, s.rate);
    if (v.size() > next_) {
      out.interval.merge(s.interval);
      out.t = std::max(out.t, s.t);
    }
  }
  ++next_;
  return out;
}

}  // namespace bench
