#include "redis_server.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "support/child_process.h"

namespace parley::testing {
namespace {

// A port in [20000, 22700): below the ephemeral range (32768-60999), and so is
// the cluster bus at port + 10000, so neither collides with outgoing connections.
int pick_port(bool cluster) { return pick_free_port(20000, 22700, cluster ? 10000 : 0); }

std::string render(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(r->str, r->len);
    case REDIS_REPLY_ERROR:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(r->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    default: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out += '\n';
        out += render(r->element[i]);
      }
      return out;
    }
  }
}

}  // namespace

RedisServer::RedisServer(std::string dir, Options opts) : dir_(std::move(dir)), opts_(opts) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
    port_ = pick_port(opts_.cluster);
    if (port_ == 0) {
      why_ = "no free port";
      return;
    }
    if (spawn() && !wait_ready(10'000)) kill9();
  }
  if (pid_ <= 0 && why_.empty()) why_ = "redis-server did not answer PING (see " + dir_ + "/log)";
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool RedisServer::spawn() {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {"redis-server", "--port", port, "--bind", "127.0.0.1",
                                   "--dir", dir_, "--save", "", "--appendonly", "yes",
                                   "--appendfsync", opts_.appendfsync, "--daemonize", "no",
                                   "--logfile", dir_ + "/log"};
  if (opts_.cluster) {
    for (const char* a : {"--cluster-enabled", "yes", "--cluster-config-file"}) args.push_back(a);
    args.push_back(dir_ + "/nodes.conf");
    args.push_back("--cluster-node-timeout");
    args.push_back(std::to_string(opts_.cluster_node_timeout_ms));
    for (const char* a : {"--cluster-replica-validity-factor", "0"}) args.push_back(a);
  }
  const pid_t pid = spawn_child(std::move(args));
  if (pid < 0) {
    why_ = "fork failed";
    return false;
  }
  pid_ = pid;
  return true;
}

bool RedisServer::wait_ready(int timeout_ms) const {
  return wait_child_ready(pid_, timeout_ms, 20, [this] { return command({"PING"}) == "PONG"; });
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

void RedisServer::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool RedisServer::restart() {
  kill9();
  // The port was just ours; a server in TIME_WAIT does not stop a new bind
  // (redis sets SO_REUSEADDR).
  if (!spawn()) return false;
  if (wait_ready(10'000)) return true;
  kill9();
  return false;
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  timeval tv{1, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr) return {};
  if (c->err) {
    redisFree(c);
    return {};
  }
  redisSetTimeout(c, timeval{5, 0});
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  std::string out = reply ? render(reply) : std::string();
  if (reply) freeReplyObject(reply);
  redisFree(c);
  return out;
}

RedisCluster::RedisCluster(std::string dir, Options opts) : dir_(std::move(dir)), opts_(opts) {
  const int n = 3 * (1 + opts_.replicas);
  for (int i = 0; i < n; ++i) {
    RedisServer::Options so;
    so.cluster = true;
    so.cluster_node_timeout_ms = opts_.node_timeout_ms;
    auto node = std::make_unique<RedisServer>(dir_ + "/n" + std::to_string(i), so);
    if (!node->ok()) {
      why_ = "cluster node " + std::to_string(i) + ": " + node->why();
      return;
    }
    nodes_.push_back(std::move(node));
  }
  std::string cmd = "redis-cli --cluster create";
  for (const auto& a : addresses()) cmd += " " + a;
  cmd += " --cluster-replicas " + std::to_string(opts_.replicas) + " --cluster-yes >" + dir_ +
         "/create.log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    why_ = "redis-cli --cluster create failed (see " + dir_ + "/create.log)";
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (auto& node : nodes_) {
      if (node->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) all = false;
      // A replica that has not synced cannot be promoted.
      const std::string repl = node->command({"INFO", "replication"});
      if (repl.find("role:slave") != std::string::npos &&
          repl.find("master_link_status:up") == std::string::npos) {
        all = false;
      }
    }
    if (all) {
      ok_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  why_ = "cluster_state:ok (and replicas in sync) not reached in 30 s";
}

int RedisCluster::master_of(uint16_t slot) const {
  for (const auto& asked : nodes_) {
    if (!asked->ok()) continue;
    const std::string nodes = asked->command({"CLUSTER", "NODES"});
    if (nodes.empty()) continue;
    // The master with the highest config epoch claiming the slot.
    int best = -1;
    long long best_epoch = -1;
    size_t at = 0;
    while (at < nodes.size()) {
      size_t end = nodes.find('\n', at);
      if (end == std::string::npos) end = nodes.size();
      std::vector<std::string> f;
      size_t p = at;
      while (p < end) {
        size_t sp = nodes.find(' ', p);
        if (sp == std::string::npos || sp > end) sp = end;
        if (sp > p) f.push_back(nodes.substr(p, sp - p));
        p = sp + 1;
      }
      at = end + 1;
      if (f.size() < 8 || f[2].find("master") == std::string::npos) continue;
      bool has = false;
      for (size_t i = 8; i < f.size() && !has; ++i) {
        if (f[i][0] == '[') continue;
        const size_t dash = f[i].find('-');
        const long first = std::stol(f[i].substr(0, dash));
        const long last = dash == std::string::npos ? first : std::stol(f[i].substr(dash + 1));
        has = slot >= first && slot <= last;
      }
      if (!has) continue;
      const long long epoch = std::stoll(f[6]);
      const std::string port = f[1].substr(f[1].rfind(':', f[1].find('@')) + 1,
                                           f[1].find('@') - f[1].rfind(':', f[1].find('@')) - 1);
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (std::to_string(nodes_[i]->port()) == port && epoch > best_epoch) {
          best = static_cast<int>(i);
          best_epoch = epoch;
        }
      }
    }
    return best;
  }
  return -1;
}

bool RedisCluster::is_master(size_t i) const {
  const std::string role = nodes_[i]->command({"ROLE"});
  return role.rfind("master", 0) == 0;
}

bool RedisCluster::wait_ok(int timeout_ms) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (const auto& node : nodes_) {
      if (!node->ok()) continue;
      if (node->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) all = false;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

RedisCluster::~RedisCluster() = default;

std::vector<std::string> RedisCluster::addresses() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) out.push_back(n->address());
  return out;
}

void RedisCluster::flush_all() {
  for (auto& n : nodes_) {
    if (n->ok() && n->command({"ROLE"}).rfind("master", 0) == 0) n->command({"FLUSHALL"});
  }
}

RedisServer& shared_redis() {
  static SharedInTempDir<RedisServer> s("parley-redis-");
  if (!s.server) s.server = std::make_unique<RedisServer>(s.dir + "/standalone");
  return *s.server;
}

RedisCluster& shared_redis_cluster() {
  static SharedInTempDir<RedisCluster> s("parley-redis-");
  if (!s.server) s.server = std::make_unique<RedisCluster>(s.dir + "/cluster");
  return *s.server;
}

RedisCluster& shared_redis_replicated_cluster() {
  static SharedInTempDir<RedisCluster> s("parley-redis-");
  if (!s.server) s.server = std::make_unique<RedisCluster>(s.dir + "/replicated", RedisCluster::Options{1, 1000});
  return *s.server;
}

}  // namespace parley::testing
