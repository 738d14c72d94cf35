#include "cpu_affinity.h"

#include <unistd.h>

#include <charconv>
#include <sstream>
#include <stdexcept>

namespace bench {

namespace {
int cpu_of(const std::string& flag, const std::string& s) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw std::runtime_error(flag + ": not a CPU number: '" + s + "'");
  const long online = sysconf(_SC_NPROCESSORS_CONF);
  if (v >= CPU_SETSIZE || (online > 0 && v >= online))
    throw std::runtime_error(flag + ": this machine has no CPU " + s);
  return v;
}
}  // namespace

CpuList parse_cpu_list(const std::string& flag, const std::string& text) {
  CpuList l;
  l.text = text;
  CPU_ZERO(&l.set);
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto dash = part.find('-');
    const int lo = cpu_of(flag, part.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : cpu_of(flag, part.substr(dash + 1));
    if (hi < lo) throw std::runtime_error(flag + ": range " + part + " runs backwards");
    for (int c = lo; c <= hi; ++c) CPU_SET(c, &l.set);
  }
  l.count = CPU_COUNT(&l.set);
  if (l.count == 0) throw std::runtime_error(flag + " names no CPU");
  return l;
}

bool pin(pid_t pid, const CpuList& cpus) {
  return sched_setaffinity(pid, sizeof cpus.set, &cpus.set) == 0;
}

}  // namespace bench
