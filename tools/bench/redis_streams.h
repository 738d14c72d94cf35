// The Redis Streams pipeline of the events scenario (issue 12): what a studio
// would run instead of Parley's topics, in the same run and with the same load
// (event_shape.h). The bench starts Debian's redis-server on a loopback port
// (appendonly yes, appendfsync everysec, no RDB), then:
//   - producers (--conns, one connection each) XADD every event to stream
//     <topic>:<p> (p = fnv1a(key) mod partitions), pipelined: an emit's batch of
//     --batch XADDs goes out in one write, up to 16 batches unanswered per
//     producer, paced like Parley's producers;
//   - one consumer per group (a worker) loops on one round trip: the XACKs of
//     what it read last (one XACK per stream, all ids), the leaderboard's ZINCRBYs
//     (group 0 only; summed per member within the batch) and a blocking
//     XREADGROUP COUNT 1000 BLOCK 100 over all streams with ">", pipelined in one
//     write; it checks per-stream order, zero loss and latency like Parley's
//     consumers.
// Reports redis-server's CPU and RSS and the workers' CPU (thread CPU time).
#pragma once

#include <cstdint>

#include "options.h"
#include "pipeline_audit.h"

namespace bench {

PipelineFigures run_redis_streams(const Options& o, uint32_t partitions);

}  // namespace bench
