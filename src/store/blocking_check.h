// "Loops never wait": a blocking store operation (a RocksDB read, iteration or
// write, a flush that waits) on an event-loop thread stalls every connection and
// channel of that loop. Each such operation starts with check_may_block(), which
// stops the process (PARLEY_CHECK: on in every build, tests included) when it
// runs on a loop thread. The cost is one thread-local read.
#pragma once

#include "common/check.h"
#include "runtime/loop_group.h"

namespace parley::store {

inline void check_may_block() { PARLEY_CHECK(runtime::LoopGroup::current() < 0); }

}  // namespace parley::store
