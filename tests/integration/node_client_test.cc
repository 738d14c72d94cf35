// Independent clients: tests/node/client_test.mjs, written with the Node `ws`
// package against PROTOCOL.md alone, and tests/node/msgpack_test.mjs (with
// @msgpack/msgpack) talk to the real server. Need node and
// tests/node/node_modules (scripts/setup_node.sh installs them).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/server_process.h"

namespace parley::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeDir = fs::path(PARLEY_SOURCE_DIR) / "tests" / "node";

// The first `name` on PATH that is executable, or "".
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

struct RunResult {
  int exit_code = -1;  // -1: killed after the timeout
  std::string output;  // stdout and stderr together
};

// Runs argv to completion (or kills it after `timeout`), collecting its output.
RunResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  RunResult r;
  int out[2];
  if (pipe(out) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the child closed its output (exited)
    r.output.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

TEST(NodeClient, WsPackageClientSpeaksTheProtocolAsDocumented) {
  const std::string node = find_on_path("node");
  if (node.empty()) GTEST_SKIP() << "node is not installed; run scripts/setup.sh";
  if (!fs::exists(kNodeDir / "node_modules" / "ws" / "package.json")) {
    GTEST_SKIP() << "tests/node/node_modules is missing; run scripts/setup_node.sh";
  }
  ServerProcess server;
  server.start();
  const auto result = run({node, (kNodeDir / "client_test.mjs").string(),
                           std::to_string(server.http_port()), ServerProcess::token("node-user")},
                          std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 0) << "node client output:\n" << result.output
                                 << "\nserver log:\n" << server.log();
}

// Runs tests/node/<script> HTTP_PORT TCP_PORT TOKEN... (one token per user) against
// a fresh server started from `spec`.
void run_node_script(const std::string& script, const std::vector<std::string>& users,
                     ServerSpec spec = ServerSpec()) {
  const std::string node = find_on_path("node");
  if (node.empty()) GTEST_SKIP() << "node is not installed; run scripts/setup.sh";
  if (!fs::exists(kNodeDir / "node_modules" / "@msgpack" / "msgpack" / "package.json")) {
    GTEST_SKIP() << "tests/node/node_modules is missing; run scripts/setup_node.sh";
  }
  ServerProcess server(std::move(spec));
  server.start();
  std::vector<std::string> argv = {node, (kNodeDir / script).string(),
                                   std::to_string(server.http_port()),
                                   std::to_string(server.tcp_port())};
  for (const auto& u : users) argv.push_back(ServerProcess::token(u));
  const auto result = run(argv, std::chrono::seconds(60));
  EXPECT_EQ(result.exit_code, 0) << "node " << script << " output:\n" << result.output
                                 << "\nserver log:\n" << server.log();
}

// PROTOCOL.md "Binary encoding: MessagePack": one channel, members in JSON over
// WebSocket, MessagePack over WebSocket and MessagePack over TCP, all getting
// the same bodies in the same order (tests/node/msgpack_test.mjs says what it
// checks).
TEST(NodeClient, MixedEncodingsDeliverTheSameBodiesInTheSameOrder) {
  run_node_script("msgpack_test.mjs", {"mp-json", "mp-ws", "mp-tcp"});
}

// PROTOCOL.md "Time for games": state frames carry the server's tick and time,
// pong the server's time, in JSON and MessagePack (tests/node/game_time_test.mjs).
TEST(NodeClient, StatesAndPongsCarryTheServerClockInBothEncodings) {
  run_node_script("game_time_test.mjs", {"gt-json", "gt-ws", "gt-tcp"});
}

// PROTOCOL.md "State deltas": one channel with plain JSON and MessagePack
// members and delta members in both encodings, each applying deltas by the
// page's rule, all seeing the same bodies in the same order; full bodies after
// a re-join and after an interest-area move; "Batched state deltas" members
// among them, the same bodies in the same order (tests/node/delta_test.mjs).
TEST(NodeClient, StateDeltasGiveDeltaMembersTheSameBodiesAsFullOnes) {
  run_node_script("delta_test.mjs", {"sender", "plain-json", "plain-mp", "delta-mp-ws", "delta-json-tcp",
                                     "delta-mp-tcp", "roamer", "batch-mp-ws", "batch-json-tcp", "batch-alone",
                                     "sender-2"},
                  spec_with_tenants(default_tenants_toml(
                      "\n[tenants.demo.namespaces.dw]\nstate_delta = true\ntick_ms = 20\n"
                      "\n[tenants.demo.namespaces.dg]\nstate_delta = true\ntick_ms = 20\naoi_cell = 10\n")));
}

// /metrics parley_namespace_wire_bytes_out_total: JSON, MessagePack and
// MessagePack + deltas members of one channel over WebSocket and TCP; the
// counters equal the bytes the clients read, by namespace and encoding
// (tests/node/wire_bytes_test.mjs).
TEST(NodeClient, WireByteCountersEqualTheBytesClientsRead) {
  run_node_script("wire_bytes_test.mjs", {"wb-json-ws", "wb-mp-ws", "wb-json-tcp", "wb-mp-tcp"},
                  spec_with_tenants(default_tenants_toml(
                      "\n[tenants.demo.namespaces.wb]\nstate_delta = true\ntick_ms = 20\n")));
}

}  // namespace
}  // namespace parley::testing
