// Runs a function on every loop of a LoopGroup, then a completion once all
// have run it: a barrier across loops (Seastar's invoke_on_all). Work posted to
// a loop before the call has run on that loop by the time `fn` runs there.
#pragma once

#include <functional>

#include "runtime/loop_group.h"

namespace parley::runtime {

// `fn(i)` runs on loop i; `done` runs once, on the loop that finished last.
// Any thread. The loops must be running.
void run_on_every_loop(LoopGroup& loops, std::function<void(unsigned loop)> fn,
                       std::function<void()> done);

}  // namespace parley::runtime
