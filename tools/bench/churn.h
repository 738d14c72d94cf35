// The churn scenario (issue 11, finding 8): channels used once and abandoned.
// `--conns` blocking WebSocket clients (a thread each) each keep --churn-depth
// fresh channels in flight: join, --churn-msgs pubs with unique ids, leave, then
// the next, until --churn-channels channels are done or --duration has passed.
// Every second the server's RSS and CPU are sampled (--server-pid); after the
// churn, sampling goes on for --churn-idle-s so that the record shows whether the
// memory of the abandoned channels comes back.
#pragma once

#include "options.h"
#include "runner.h"

namespace bench {

RunResult run_churn(const Options& o);

}  // namespace bench
