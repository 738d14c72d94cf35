#include "procstat.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace bench {

ProcStat read_proc(int pid) {
  ProcStat s;
  if (pid <= 0) return s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return s;
  // The command name may hold spaces; fields resume after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 3) s.alive = field != "Z" && field != "X";  // a dead child not yet reaped
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  s.cpu_s = double(utime + stime) / double(sysconf(_SC_CLK_TCK));
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) s.rss = kb * 1024;
    if (std::sscanf(line.c_str(), "VmHWM: %llu kB", &kb) == 1) s.peak_rss = kb * 1024;
  }
  s.ok = true;
  return s;
}

double self_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace bench

namespace bench {

std::string machine_summary() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(cpu, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  double load[3] = {0, 0, 0};
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(f);
  }
  double gib = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)) / (1 << 30);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%ld cpus (%s), %.0f GiB, load %.2f %.2f %.2f",
                sysconf(_SC_NPROCESSORS_ONLN), model.c_str(), gib, load[0], load[1], load[2]);
  return buf;
}

}  // namespace bench
