// Tests only: runs fn on loop `i` of a running LoopGroup and waits for it, so
// that a test reads and drives loop-owned state from its own thread. Returns
// false when fn did not run within `timeout` (the loop is stuck or stopped);
// fn is then still queued and must not refer to the caller's frame, so callers
// assert on the result (ASSERT_TRUE) and stop.
#pragma once

#include <chrono>
#include <future>

#include "runtime/loop_group.h"

namespace parley::runtime {

template <typename Fn>
bool run_and_wait(LoopGroup& loops, unsigned i, Fn&& fn,
                  std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  std::promise<void> ran;
  loops.run_on(i, [&] {
    fn();
    ran.set_value();
  });
  return ran.get_future().wait_for(timeout) == std::future_status::ready;
}

}  // namespace parley::runtime
