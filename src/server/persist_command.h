// `parley persist --config FILE`: the WAL persister as its own process (see
// persist/persister.h), with /metrics and /healthz on persist.listen. Runs
// until SIGTERM or SIGINT. Returns an exit code (server/cli.h).
#pragma once

#include "server/cli.h"

namespace parley::server {

int run_persist(const PersistArgs& args);

}  // namespace parley::server
