// CPU seconds and memory of a process, from /proc (Linux only).
#pragma once

#include <cstdint>
#include <string>

namespace bench {

struct ProcStat {
  bool ok = false;
  bool alive = false;  // running, not a zombie
  double cpu_s = 0;       // user + system, all threads
  uint64_t rss = 0;       // bytes, now
  uint64_t peak_rss = 0;  // bytes, VmHWM
};

ProcStat read_proc(int pid);
double self_cpu_s();  // this process, all threads (getrusage)
// "N cpus (model), M GiB, load a/b/c": what a figure of record needs about the host.
std::string machine_summary();

}  // namespace bench
