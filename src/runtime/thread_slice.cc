#include "runtime/thread_slice.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace parley::runtime {

namespace {
// include/uapi/linux/sched/types.h (glibc has no wrapper).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

bool get(SchedAttr& a) {
  std::memset(&a, 0, sizeof a);
  return syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) == 0;
}
}  // namespace

bool set_thread_slice_us(uint32_t us) {
  if (us == 0) return true;
  SchedAttr a;
  if (!get(a)) return false;
  a.size = sizeof a;
  a.sched_flags = 0;
  a.sched_runtime = uint64_t{us} * 1000;  // same policy and nice: needs no privilege
  return syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

uint32_t thread_slice_us() {
  SchedAttr a;
  if (!get(a)) return 0;
  return static_cast<uint32_t>(a.sched_runtime / 1000);
}

}  // namespace parley::runtime
