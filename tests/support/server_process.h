// Runs the real `parley` binary for integration tests: writes a config into a
// temporary folder, starts `parley serve`, waits for its "parley ready" line
// and reads the bound ports from it (listeners use port 0).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/client.h"

namespace parley::testing {

// Two tenants with known keys, used by most tests.
inline constexpr const char* kDemoSecret = "test-secret-demo-0123456789abcdef";
inline constexpr const char* kOtherSecret = "test-secret-other-0123456789abcdef";
inline constexpr const char* kDemoApiKey = "key-demo";
inline constexpr const char* kOtherApiKey = "key-other";

// The default tenants section; tests append namespaces or override keys.
std::string default_tenants_toml(const std::string& demo_extra = "");

// A [valkey] section naming these nodes ("host:port") for store = "valkey", the
// Cluster mode when `cluster`; keys appended after it land in the section.
std::string valkey_toml(const std::vector<std::string>& nodes, bool cluster = false);

struct ServerSpec {
  std::string tenants_toml = default_tenants_toml();
  std::string store = "embedded";
  std::string server_extra;  // more [server] keys, one per line
  std::string log_level = "warn";
  bool tcp = true;
  bool unix_socket = false;
};

// A spec with these tenants (and more [server] keys); the rest as ServerSpec has it.
inline ServerSpec spec_with_tenants(std::string tenants_toml, std::string server_extra = "") {
  ServerSpec spec;
  spec.tenants_toml = std::move(tenants_toml);
  spec.server_extra = std::move(server_extra);
  return spec;
}

class ServerProcess {
 public:
  explicit ServerProcess(ServerSpec spec = {});
  ~ServerProcess();  // SIGKILLs a server still running, removes the folder

  void start();               // asserts (gtest) on failure
  // Starts a server whose store does not answer yet: returns once it said so
  // ("parley waiting for the store http=... tcp=..."), ports known; its
  // `parley ready` line, when it comes, is in log().
  void start_waiting_for_store();
  // Starts a server that must refuse to start: its exit status (-1 on timeout, or
  // when it started after all: then a gtest failure, and it is killed).
  int start_expecting_exit(std::chrono::milliseconds timeout);
  // More `parley serve` arguments for the starts after this call.
  void set_extra_args(std::vector<std::string> args) { extra_args_ = std::move(args); }
  // RLIMIT_NOFILE of the servers started after this call (0: inherited).
  void set_fd_limit(uint64_t n) { fd_limit_ = n; }
  void restart() { start(); } // same config and data folder
  // Replaces the config file (atomically) with `spec`; a running server reads
  // it at its next reload (SIGHUP or `parley reload`).
  void write_config(ServerSpec spec);
  std::string config_path() const { return dir_ + "/parley.toml"; }
  void hangup();              // SIGHUP: the server reloads its config
  void kill9();               // SIGKILL, then reaps
  void terminate();           // SIGTERM only
  // Waits for exit; returns the exit status, or -1 on timeout.
  int wait_exit(std::chrono::milliseconds timeout);
  bool running() const { return child_.running(); }
  pid_t pid() const { return child_.pid(); }

  uint16_t http_port() const { return http_port_; }
  uint16_t tcp_port() const { return tcp_port_; }
  // Where a client over `wire` connects: tcp_port() for raw TCP, else http_port().
  uint16_t port(Wire wire) const { return wire == Wire::kTcp ? tcp_port_ : http_port_; }
  const std::string& dir() const { return dir_; }
  std::string unix_path() const { return dir_ + "/parley.sock"; }
  std::string log() const;  // what the server wrote to stderr/stdout

  // A client token for the demo (or other) tenant.
  static std::string token(const std::string& user, const std::string& tenant = "demo",
                           std::vector<std::string> chans = {}, bool has_chans = false,
                           int64_t ttl_s = 3600);

 private:
  bool launch(const char* marker = "parley ready");  // true once the marker's line was read
  void write_config_text(std::ostream& out) const;

  ServerSpec spec_;
  std::vector<std::string> extra_args_;
  uint64_t fd_limit_ = 0;
  std::string dir_;
  ParleyChild child_;
  uint16_t http_port_ = 0;
  uint16_t tcp_port_ = 0;
};

// `parley ARGS` run to its end (ARGS as shell words: tests pass only fixed
// strings): its exit code (-1: killed by a signal) and its stdout and stderr
// together.
struct CliRun {
  int exit_code = -1;
  std::string output;
};
CliRun run_parley(const std::string& args);

// A blocking HTTP/1.1 request to 127.0.0.1:port. Returns status and body.
struct HttpResult {
  int status = 0;
  std::string body;
};
HttpResult http_request(uint16_t port, const std::string& method, const std::string& target,
                        const std::string& body = "", const std::string& api_key = "");

// The value of one sample line of the server's /metrics ("name" or
// "name{label=\"v\"}"), or -1 when it is not there.
int64_t metric_value(uint16_t port, const std::string& series);

// Every stored message of `ch`, oldest first: GET /v1/history paged with `after`
// until a page is empty. EXPECTs (gtest) each page to be answered 200.
std::vector<std::string> http_history_all(uint16_t port, const std::string& ch,
                                          const std::string& api_key = kDemoApiKey);

// A fixture whose test suite shares one server, started before the suite's
// first test and killed after its last:
//   class FooTest : public SharedServerTest<FooTest> {
//    public:
//     static ServerSpec server_spec() { ... }  // optional; default ServerSpec{}
//   };
template <typename Suite>
class SharedServerTest : public ::testing::Test {
 public:
  static ServerSpec server_spec() { return {}; }

 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(Suite::server_spec());
    server_->start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // connect_as (support/client.h) on this suite's server, over WebSocket.
  static std::unique_ptr<Client> connect_as(const std::string& user,
                                            const std::string& tenant = "demo") {
    return ::parley::testing::connect_as(server_->http_port(), user, tenant);
  }

  static inline ServerProcess* server_ = nullptr;
};

}  // namespace parley::testing
