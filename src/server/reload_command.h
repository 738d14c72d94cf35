// `parley reload`: asks a running server to re-read its configuration file
// (POST /admin/api/reload with server.admin_key as a bearer header) and prints
// its answer. Exit 0 when it reloaded; 1 when it refused (the file is invalid:
// nothing changed, the reason is printed) or could not be asked.
#pragma once

#include "server/cli.h"

namespace parley::server {

int run_reload(const ReloadArgs& args);

}  // namespace parley::server
