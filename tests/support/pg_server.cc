#include "pg_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "support/child_process.h"

namespace parley::testing {
namespace {

constexpr const char* kBin = "/usr/lib/postgresql/15/bin/";

// [23000, 25000): below the ephemeral range and clear of the Redis fixture's
// ports (20000-22699) and their cluster buses (+10000).
int pick_port() { return pick_free_port(23000, 25000); }

// Who runs PostgreSQL: `postgres` when we are root (it refuses root), else us.
struct Owner {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};
Owner owner() {
  Owner o;
  if (::geteuid() != 0) return o;
  if (const passwd* pw = ::getpwnam("postgres")) {
    o.switch_user = true;
    o.uid = pw->pw_uid;
    o.gid = pw->pw_gid;
  }
  return o;
}

// The child's options: run as the owner, quiet stdio into `log`.
SpawnOptions as_owner(const Owner& o, const std::string& log) {
  return SpawnOptions{log, o.switch_user, o.uid, o.gid};
}

// The postmaster's children (backends, checkpointer, ...): each calls setsid(), so
// a signal to the postmaster's process group does not reach them.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    FILE* f = std::fopen((e.path() / "stat").c_str(), "r");
    if (!f) continue;
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // "pid (comm) state ppid ...": comm may hold spaces, so read after the last ')'.
    const char* close = std::strrchr(buf, ')');
    int ppid = 0;
    char state = 0;
    if (close && std::sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

// The postmaster and every child of it.
void signal_instance(pid_t postmaster, int sig) {
  ::kill(postmaster, sig);
  for (pid_t c : children_of(postmaster)) ::kill(c, sig);
}

}  // namespace

PgServer::PgServer(std::string dir) : dir_(std::move(dir)), data_(dir_ + "/data") {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const Owner o = owner();
  if (o.switch_user && ::chown(dir_.c_str(), o.uid, o.gid) != 0) {
    why_ = "cannot hand " + dir_ + " to postgres";
    return;
  }
  ::chmod(dir_.c_str(), 0755);
  // The folders above must be searchable by postgres (mkdtemp makes 0700 ones).
  if (!run_as_owner({std::string(kBin) + "initdb", "-D", data_, "-A", "trust", "-U", "postgres",
                     "--no-sync", "-E", "UTF8", "--locale", "C"},
                    dir_ + "/initdb.log")) {
    why_ = "initdb failed (see " + dir_ + "/initdb.log)";
    return;
  }
  for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
    port_ = pick_port();
    if (port_ == 0) {
      why_ = "no free port";
      return;
    }
    if (spawn() && !wait_ready(30'000)) kill9();
  }
  if (pid_ <= 0) {
    if (why_.empty()) why_ = "postgres did not answer (see " + dir_ + "/log)";
    return;
  }
  const std::string made = query_in("postgres", "CREATE DATABASE parley", 5);
  if (made != "CREATE DATABASE") {
    why_ = "CREATE DATABASE parley: " + made;
    kill9();
  }
}

PgServer::~PgServer() {
  if (pid_ > 0) kill9();
}

std::string PgServer::url() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/parley";
}

bool PgServer::run_as_owner(const std::vector<std::string>& argv, const std::string& log) const {
  const pid_t pid = spawn_child(argv, as_owner(owner(), log));
  if (pid < 0) return false;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool PgServer::spawn() {
  std::vector<std::string> args = {std::string(kBin) + "postgres", "-D", data_, "-p",
                                   std::to_string(port_), "-k", data_, "-c",
                                   "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                                   "max_connections=200", "-c", "shared_buffers=32MB"};
  // Backends orphaned by a kill9 become our children, so kill9 reaps them
  // (pid 1 of a container may never do it).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t pid = spawn_child(std::move(args), as_owner(owner(), dir_ + "/log"));
  if (pid < 0) {
    why_ = "fork failed";
    return false;
  }
  pid_ = pid;
  return true;
}

bool PgServer::wait_ready(int timeout_ms) const {
  const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) +
                               " user=postgres dbname=postgres connect_timeout=2";
  return wait_child_ready(pid_, timeout_ms, 50, [&] {
    PGconn* c = PQconnectdb(conninfo.c_str());
    const bool up = PQstatus(c) == CONNECTION_OK;
    PQfinish(c);
    return up;
  });
}

void PgServer::stop() {
  if (pid_ <= 0) return;
  signal_instance(pid_, SIGCONT);
  ::kill(pid_, SIGQUIT);
  if (wait_child_exit(pid_, std::chrono::seconds(10)) >= 0) {
    pid_ = -1;
    return;
  }
  kill9();
}

void PgServer::kill9() {
  if (pid_ <= 0) return;
  // Children first (the postmaster would notice and act), then the postmaster;
  // the children are reparented here (subreaper) and reaped.
  const std::vector<pid_t> kids = children_of(pid_);
  for (pid_t c : kids) {
    ::kill(c, SIGCONT);
    ::kill(c, SIGKILL);
  }
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  for (pid_t c : kids) ::waitpid(c, nullptr, 0);
  pid_ = -1;
}

bool PgServer::start() {
  if (pid_ > 0) return true;
  // Backends of a killed postmaster leave once they notice it gone; until then
  // the new one refuses (shared memory still in use): try for a while.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!spawn()) return false;
    if (wait_ready(15'000)) return true;
    kill9();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

void PgServer::pause() {
  if (pid_ > 0) signal_instance(pid_, SIGSTOP);
}

void PgServer::resume() {
  if (pid_ > 0) signal_instance(pid_, SIGCONT);
}

std::string PgServer::query(const std::string& sql, int timeout_s) const {
  return query_in("parley", sql, timeout_s);
}

std::string PgServer::query_in(const std::string& db, const std::string& sql, int timeout_s) const {
  const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) +
                               " user=postgres dbname=" + db +
                               " connect_timeout=" + std::to_string(timeout_s);
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    PQfinish(c);
    return {};
  }
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  const ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_TUPLES_OK) {
    for (int i = 0; i < PQntuples(r); ++i) {
      if (i) out += '\n';
      for (int j = 0; j < PQnfields(r); ++j) {
        if (j) out += '|';
        out += PQgetvalue(r, i, j);
      }
    }
  } else if (st == PGRES_COMMAND_OK) {
    out = PQcmdStatus(r);
  } else {
    out = "ERROR: " + std::string(PQresultErrorMessage(r));
    while (!out.empty() && out.back() == '\n') out.pop_back();
  }
  PQclear(r);
  PQfinish(c);
  return out;
}

PgServer& shared_pg() {
  static SharedInTempDir<PgServer> s("parley-pg-");
  if (!s.server) s.server = std::make_unique<PgServer>(s.dir);
  return *s.server;
}

}  // namespace parley::testing
