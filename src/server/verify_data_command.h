// `parley verify-data DIR`: checks an embedded store's files offline (the
// server stopped) against their checksums: every table file and every WAL
// record. Prints one line per damaged file with the channels it holds there,
// and what to do. DIR is the server's data_dir or its store/ folder.
// Exit codes (server/cli.h): 0 intact, 1 damage found, 2 bad usage or no store.
#pragma once

#include <string>
#include <vector>

namespace parley::server {

int run_verify_data(const std::vector<std::string>& args);

}  // namespace parley::server
