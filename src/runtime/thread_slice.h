// The scheduler slice of the calling thread (Linux >= 6.12, EEVDF).
//
// A fair-class thread may ask for a shorter slice (sched_attr.sched_runtime):
// same CPU share, earlier deadlines, so the scheduler lets it finish a short
// burst before a thread it just woke runs on its CPU. An event loop's burst
// is one message: a read and its deliveries, every send() waking a receiver.
// With the default slice (~0.7 ms x (1 + log2 CPUs)), each woken receiver on
// the same CPU preempted the loop mid-burst: ~8 preemptions per message at
// room 200 with threads = 1 on a 2-core machine, two context switches each
// (issue 9; `git show b684f50:bench/results/7ca8535/lean/README.md`). With two loops on two CPUs it cost
// more than it saved (a loop woken by the other's hand-off preempts it at
// once), so the server applies it only when server.loop_slice_us is set.
//
// Best effort: on older kernels sched_runtime is ignored for fair threads.
#pragma once

#include <cstdint>

namespace parley::runtime {

// Sets the calling thread's slice to `us` microseconds (the kernel clamps to
// 100 us .. 100 ms), keeping its policy and nice value. 0 leaves it alone.
// False with errno set when the kernel refuses.
bool set_thread_slice_us(uint32_t us);

// The calling thread's slice in microseconds as the kernel reports it (0 when
// it cannot be read).
uint32_t thread_slice_us();

}  // namespace parley::runtime
