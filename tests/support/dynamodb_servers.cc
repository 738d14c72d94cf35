#include "support/dynamodb_servers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "support/child_process.h"

namespace parley::testing {

namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(PARLEY_SOURCE_DIR) / "tests" / "dynamodb";

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// stdout of a command (popen; the arguments are ours, quoted).
std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

void stop(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  wait_child_exit(pid, std::chrono::seconds(10));
  pid = -1;
}

}  // namespace

bool dynamodb_tools_installed() {
  int st = 0;
  run("command -v node >/dev/null 2>&1", &st);
  return st == 0 && fs::exists(kDir / "node_modules" / "dynalite" / "cli.js") &&
         fs::exists(kDir / "node_modules" / "@aws-sdk" / "client-dynamodb");
}

DynaliteServer::DynaliteServer(std::string dir) : dir_(std::move(dir)) {
  port_ = pick_free_port(20000, 30000);
  if (port_ > 0) start();
}

DynaliteServer::~DynaliteServer() { stop(pid_); }

bool DynaliteServer::start() {
  stop(pid_);
  // createTableMs 50: CreateTable's CREATING state, short (AWS: seconds).
  pid_ = spawn_child({"node", (kDir / "node_modules" / "dynalite" / "cli.js").string(), "--host", "127.0.0.1",
                      "--port", std::to_string(port_), "--path", dir_ + "/db", "--createTableMs", "50"},
                     SpawnOptions{dir_ + "/dynalite.log"});
  if (pid_ <= 0) return false;
  if (!wait_child_ready(pid_, 20000, 50, [this] { return accepts(port_); })) {
    stop(pid_);
    return false;
  }
  return true;
}

void DynaliteServer::kill9() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);  // a paused one dies too
  stop(pid_);
}

void DynaliteServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void DynaliteServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

ThrottleProxy::ThrottleProxy(int target_port, double share, double partial, const std::string& log,
                             const std::string& tls_key, const std::string& tls_cert)
    : tls_(!tls_key.empty()) {
  port_ = pick_free_port(30000, 40000);
  if (port_ <= 0) return;
  std::vector<std::string> args = {"node", (kDir / "throttle_proxy.mjs").string(), std::to_string(port_),
                                   std::to_string(target_port), std::to_string(share), std::to_string(partial)};
  if (tls_) {
    args.push_back(tls_key);
    args.push_back(tls_cert);
  }
  pid_ = spawn_child(std::move(args), SpawnOptions{log});
  if (pid_ > 0 && !wait_child_ready(pid_, 10000, 50, [this] { return accepts(port_); })) stop(pid_);
}

ThrottleProxy::~ThrottleProxy() { stop(pid_); }

long ThrottleProxy::stat(const char* name) const {
  int st = 0;
  const std::string out = run("node -e 'fetch(\"" + endpoint() + "/stats\").then(r => r.json()).then(j => console.log(j." +
                                  name + "))' 2>/dev/null",
                              &st);
  return st == 0 && !out.empty() ? std::stol(out) : -1;
}

std::vector<TableItem> table_items(const std::string& endpoint, const std::string& table, bool* ok) {
  int st = 0;
  const std::string out =
      run("node '" + (kDir / "table_items.mjs").string() + "' '" + endpoint + "' '" + table + "' 2>/dev/null", &st);
  if (ok) *ok = st == 0;
  std::vector<TableItem> items;
  if (st != 0 || out.rfind("no table", 0) == 0) return items;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t at = 0;
    for (int i = 0; i < 4; ++i) {
      const size_t tab = line.find('\t', at);
      if (tab == std::string::npos) break;
      f.push_back(line.substr(at, tab - at));
      at = tab + 1;
    }
    if (f.size() != 4) continue;
    items.push_back(TableItem{f[0], std::stoll(f[1]), f[2], f[3], line.substr(at)});
  }
  return items;
}

DynaliteServer& shared_dynalite() {
  static SharedInTempDir<DynaliteServer> shared("parley-dynalite-");
  if (!shared.server) shared.server = std::make_unique<DynaliteServer>(shared.dir);
  return *shared.server;
}

}  // namespace parley::testing
