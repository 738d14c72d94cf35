// What a config reload may change while the server runs, and what must wait
// for a restart (docs/operations.md "Reloading the config"). Pure functions:
// no I/O, no state, unit-tested in reload_plan_test.cc.
#pragma once

#include <string>
#include <vector>

#include "server/config.h"

namespace parley::server {

struct ReloadPlan {
  // What the server runs after the reload: the file's settings, except that
  // every key needing a restart keeps its running value (so what runs stays
  // coherent, and says so).
  ServerConfig next;
  // The keys the file changes that take effect only at the next start, by
  // their path in the file ("server.listen",
  // "tenants.demo.namespaces.world.upstream").
  std::vector<std::string> restart_required;
};

// `running` is what the server runs now; `file` the configuration just read.
ReloadPlan plan_reload(const ServerConfig& running, ServerConfig file);

}  // namespace parley::server
