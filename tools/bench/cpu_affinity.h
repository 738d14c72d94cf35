// CPU lists for compare's split-core runs (issue 29): "0", "1,3", "0-1" parsed into
// a cpu_set_t and applied with sched_setaffinity, so that every target (started
// after fork, before exec: its threads inherit the mask) and the generator (this
// process, pinned before its worker threads start) run on separate CPUs.
// Thread: called from compare's thread only.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>

namespace bench {

struct CpuList {
  cpu_set_t set;
  int count = 0;
  std::string text;  // as given, for reports
};

// Throws std::runtime_error naming the flag on a malformed list or a CPU this
// machine does not have.
CpuList parse_cpu_list(const std::string& flag, const std::string& text);
// sched_setaffinity(pid, list); pid 0 = the calling thread. False with errno set.
bool pin(pid_t pid, const CpuList& cpus);

}  // namespace bench
