// The events scenario (issue 12): game servers emitting to a topic and
// consumer groups reading it, over the Unix socket (--unix PATH) or raw TCP,
// with the tenant's api_key. Producers (--conns) emit --rate events/s in total
// in emits of --batch events over --keys keys, pipelined (16 emits in flight
// each); every group (--groups, --members each) consumes, checks per-partition
// order inside each assignment, and commits after each frame. At the end the
// audit checks that every acknowledged event reached every group (zero loss),
// and reports emit -> receive latency (one clock: producers and consumers share
// this process), redeliveries, and the server's CPU and RSS (--server-pid).
#pragma once

#include "options.h"
#include "runner.h"

namespace bench {

RunResult run_events(const Options& o);

}  // namespace bench
