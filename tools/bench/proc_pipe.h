// --procs: how a forked load process reports to its parent. One text line per
// per-second sample and one final line, over a pipe; the parent merges samples of
// the same index across processes (counters add, histograms merge).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "channel_audit.h"
#include "stats.h"

namespace bench {

class PipeWriter {
 public:
  explicit PipeWriter(int fd) : fd_(fd) {}
  void sample(const Sample& s);
  void final(const Counters& c, const Latencies& l, const AuditResult& a, double own_cpu_s,
             double load_end_t);

 private:
  void write_line(const std::string& line);
  int fd_;
};

struct ProcFinal {
  bool present = false;
  Counters counters;
  Latencies latencies;
  AuditResult audit;
  double own_cpu_s = 0;
  double load_end_t = 0;
};

class ProcMerger {
 public:
  explicit ProcMerger(int procs) : per_(size_t(procs)), finals_(size_t(procs)) {}
  void add_sample(int proc, Sample s) { per_[size_t(proc)].push_back(std::move(s)); }
  void set_final(int proc, ProcFinal f) { finals_[size_t(proc)] = std::move(f); }
  // The next merged sample once every process has sent it; with `flush`, also the
  // ones some processes never sent (they stopped earlier): their last totals count.
  std::optional<Sample> next_complete(bool flush = false);
  const ProcFinal& final_of(int proc) const { return finals_[size_t(proc)]; }

 private:
  std::vector<std::vector<Sample>> per_;
  std::vector<ProcFinal> finals_;
  size_t next_ = 0;
};

class PipeReader {
 public:
  explicit PipeReader(int fd) : fd_(fd) {}
  int fd() const { return fd_; }
  bool eof() const { return eof_; }
  // Reads what is available and hands complete lines to the merger.
  void pump(int proc, ProcMerger& m);

 private:
  int fd_;
  bool eof_ = false;
  std::string buf_;
};

}  // namespace bench
