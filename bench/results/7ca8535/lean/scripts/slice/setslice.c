// setslice TID NS: sets a SCHED_OTHER thread's EEVDF slice (sched_attr.sched_runtime, Linux >= 6.12)
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
struct sched_attr { uint32_t size, sched_policy; uint64_t sched_flags; int32_t sched_nice; uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period; uint32_t sched_util_min, sched_util_max; };
int main(int argc, char** argv) {
  struct sched_attr a = {0}; a.size = sizeof a;
  if (syscall(SYS_sched_getattr, atoi(argv[1]), &a, sizeof a, 0)) { perror("getattr"); return 1; }
  printf("before: policy %u nice %d runtime %lu\n", a.sched_policy, a.sched_nice, (unsigned long)a.sched_runtime);
  a.sched_runtime = strtoull(argv[2], 0, 10);
  if (syscall(SYS_sched_setattr, atoi(argv[1]), &a, 0)) { perror("setattr"); return 1; }
  syscall(SYS_sched_getattr, atoi(argv[1]), &a, sizeof a, 0);
  printf("after: runtime %lu\n", (unsigned long)a.sched_runtime);
  return 0;
}
