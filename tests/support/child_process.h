// The child processes a test starts (redis-server, postgres, the `parley`
// binary): a free loopback port, fork/exec with the child tied to the test's
// life, waiting until it answers, waiting for its exit, a temporary folder for a
// server shared by a whole test binary.
//
// Test code only, POSIX calls that block; no gtest, so the store's own unit
// tests can use it. Not thread-safe: one test thread drives it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace parley::testing {

// A random port in [lo, hi) that binds on 127.0.0.1 now (and so does port +
// also_free_at, when not 0: a Redis cluster bus); 0 if 200 tries found none.
int pick_free_port(int lo, int hi, int also_free_at = 0);

struct SpawnOptions {
  // stdout and stderr go there (appended); empty: /dev/null. stdin is /dev/null.
  std::string log;
  // Run as this user and group (set before the child's death signal, which a
  // credentials change clears).
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Forks and execs args[0] (searched in PATH when it holds no '/'). The child is
// SIGKILLed when the test process dies (PR_SET_PDEATHSIG). The child's pid, or
// -1 if fork failed.
pid_t spawn_child(std::vector<std::string> args, const SpawnOptions& opts = {});

// Polls `up` every poll_ms until it is true (true) or timeout_ms passed or the
// child `pid` exited (false).
bool wait_child_ready(pid_t pid, int timeout_ms, int poll_ms, const std::function<bool()>& up);

// Waits for `pid` to exit: its exit status (128 + signal when killed), or -1 on
// timeout (it is still running).
int wait_child_exit(pid_t pid, std::chrono::milliseconds timeout);

// A new folder $TMPDIR/<prefix>XXXXXX (/tmp without TMPDIR); "" if it failed.
std::string make_temp_dir(const std::string& prefix);

// A file's whole content ("" when missing).
std::string read_file(const std::string& path);

// A server (or group of them) shared by a test binary in a temporary folder:
// started on first use, stopped at exit, then the folder removed.
template <typename T>
struct SharedInTempDir {
  explicit SharedInTempDir(const std::string& prefix) : dir(make_temp_dir(prefix)) {}
  ~SharedInTempDir() {
    server.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::unique_ptr<T> server;
};

// A `parley` subcommand run as a child: stdout read line by line until a line
// that `ready` accepts (at most 20 s), every other line and stderr written to
// `log`; after that stdout keeps being drained into `log` so the child never
// blocks on a full pipe. Not tied to the test's life: the owner kills it.
class ParleyChild {
 public:
  // The binary the tests run: PARLEY_TEST_BIN (e.g. a sanitizer build) or `bin`.
  static std::string binary(const char* bin);

  // True once the ready line was read; running() even when it was not (the
  // owner reads the log, then kills it or waits for its exit).
  bool launch(const std::vector<std::string>& args, const std::string& log,
              const std::function<bool(const std::string& line)>& ready, uint64_t fd_limit = 0);
  void kill9();  // SIGKILL, then reaps
  void signal(int sig);
  int wait_exit(std::chrono::milliseconds timeout);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

}  // namespace parley::testing
