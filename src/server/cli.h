// The command line of `parley`: each command's arguments parsed into a Result,
// so a bad argument is a message and exit code 2, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace parley::server {

// Exit codes of every command: 0 done, 1 failed while running, 2 bad usage
// (an argument, or a configuration file that does not check).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct ServeArgs {
  std::string config_path;  // empty: the demo configuration
  bool accept_data_loss = false;  // --accept-data-loss: overrides [server] accept_data_loss
};

struct TokenArgs {
  std::string config_path;
  std::string tenant;
  std::string user;
  int64_t ttl_s = 3600;
  bool has_chans = false;
  std::vector<std::string> chans;
};

struct CheckConfigArgs {
  std::string path;
};

struct ReloadArgs {
  std::string config_path;  // where server.listen and server.admin_key are read
  std::string server;       // host:port, instead of the file's server.listen
  std::string key;          // the admin key, instead of the file's server.admin_key
};

struct PersistArgs {
  std::string config_path;  // required: [valkey], [postgres] url, [tenants.*], [persist]
};

// A whole decimal number in [lo, hi] given to `flag`.
Result<int64_t> parse_int_arg(std::string_view flag, std::string_view text, int64_t lo,
                              int64_t hi);

Result<ServeArgs> parse_serve_args(const std::vector<std::string>& args);
Result<TokenArgs> parse_token_args(const std::vector<std::string>& args);
Result<CheckConfigArgs> parse_check_config_args(const std::vector<std::string>& args);
Result<PersistArgs> parse_persist_args(const std::vector<std::string>& args);
// Needs --config, or both --server and --key.
Result<ReloadArgs> parse_reload_args(const std::vector<std::string>& args);

}  // namespace parley::server
