// A real PostgreSQL 15 for tests (TESTING.md "Servers from Debian"): initdb in a
// temporary folder, the postmaster on a free loopback port, its Unix socket in
// the data dir.
//
// PostgreSQL refuses to run as root, so when the tests run as root (CI) initdb and
// the postmaster run as the `postgres` user (the folder is handed to it); as any
// other user they run as that user. The postmaster is a child process (not
// daemonized, like pg_ctl would), so a test can pause every process of the
// instance (SIGSTOP to the postmaster and each of its children, found in /proc:
// each backend calls setsid(), so a process group would not reach them: a hung
// database), crash it whole (SIGKILL to all of them) and start it again on the
// same port and data. It dies
// with the test process (PR_SET_PDEATHSIG). Start it once per test binary:
// shared_pg() does, and stops it at exit.
//
// Test code only; the calls block (libpq's synchronous API). Not thread-safe:
// one test thread drives it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace parley::testing {

class PgServer {
 public:
  // initdb under `dir` (created when missing; must not hold a cluster yet), then
  // start and wait until a query answers. ok() says whether it did (why() if not).
  explicit PgServer(std::string dir);
  ~PgServer();  // an immediate stop
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  bool ok() const { return pid_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  // A libpq connection URI to the `parley` database as the superuser.
  std::string url() const;
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // `pg_ctl -m immediate stop`: SIGQUIT to the postmaster, which stops its
  // backends without a checkpoint (recovery replays the WAL on the next start).
  void stop();
  // Starts a stopped (or crashed) instance again on the same port and data;
  // true once a query answers.
  bool start();
  // A crash: SIGKILL to every process of the instance.
  void kill9();
  bool restart() {
    stop();
    return start();
  }
  // A hang: every process of the instance stops (SIGSTOP) until resume(); open
  // connections stay open and answer nothing, new ones are not served.
  void pause();
  void resume();

  // One SQL text (several statements allowed) on a fresh connection, at most
  // timeout_s seconds to connect. Rows of the last result as "a|b" lines joined
  // by '\n', a command's status ("INSERT 0 1") when there are no rows, "ERROR: ..."
  // for an error; "" if the server could not be reached.
  std::string query(const std::string& sql, int timeout_s = 5) const;

 private:
  std::string query_in(const std::string& db, const std::string& sql, int timeout_s) const;
  bool spawn();
  bool wait_ready(int timeout_ms) const;
  bool run_as_owner(const std::vector<std::string>& argv, const std::string& log) const;

  std::string dir_;
  std::string data_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string why_;
};

// Started on first use, stopped at exit; check ok().
PgServer& shared_pg();

}  // namespace parley::testing
