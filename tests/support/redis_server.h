// Real Redis servers for tests (TESTING.md "Servers from Debian"): one standalone
// redis-server, or a 3-master cluster, on loopback ports in a temporary folder.
//
// Each server is a child process (not daemonized) so a test can pause it
// (SIGSTOP), crash it (SIGKILL) and start it again on the same port and data dir
// (the AOF brings its data back). Children die with the test process
// (PR_SET_PDEATHSIG). Start them once per test binary: shared_redis() and
// shared_redis_cluster() do, and stop them at exit.
//
// Test code only; the calls block (hiredis's synchronous API). Not thread-safe:
// one test thread drives them.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace parley::testing {

class RedisServer {
 public:
  struct Options {
    bool cluster = false;       // --cluster-enabled yes (then pick a port below 55536)
    std::string appendfsync = "everysec";
    int cluster_node_timeout_ms = 2000;
  };

  // Starts redis-server on a free loopback port under `dir` (created when missing)
  // and waits until it answers PING. ok() says whether it did (why() if not).
  RedisServer(std::string dir, Options opts);
  explicit RedisServer(std::string dir) : RedisServer(std::move(dir), Options{}) {}
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool ok() const { return pid_ > 0; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }

  // A hang: the server keeps its sockets but answers nothing until resume().
  void pause();
  void resume();
  // A crash (SIGKILL), then, if asked, the same server again on the same port
  // and dir; true once it answers PING.
  void kill9();
  bool restart();

  // One command, arguments as given (binary-safe); the reply rendered as text:
  // a string or status as itself, an integer in decimal, nil as "(nil)", an error
  // as "ERR ...", an array as its elements joined by '\n'. "" if unreachable.
  std::string command(const std::vector<std::string>& args) const;

 private:
  bool spawn();
  bool wait_ready(int timeout_ms) const;

  std::string dir_;
  Options opts_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string why_;
};

// Three masters with --cluster-enabled, joined by `redis-cli --cluster create`,
// every slot covered (cluster_state:ok on each node) before the constructor returns.
// With replicas = 1, three more nodes replicate one master each (nodes 3..5), and
// the constructor also waits until each has synced (master_link_status:up), so a
// failover can promote it; cluster-replica-validity-factor 0 lets a replica take
// over however long its master has been gone.
class RedisCluster {
 public:
  struct Options {
    int replicas = 0;
    int node_timeout_ms = 2000;
  };
  explicit RedisCluster(std::string dir) : RedisCluster(std::move(dir), Options{}) {}
  RedisCluster(std::string dir, Options opts);
  ~RedisCluster();
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  std::vector<std::string> addresses() const;
  RedisServer& node(size_t i) { return *nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // FLUSHALL on every master.
  void flush_all();
  // The node currently serving `slot` as master (as node 0.. sees it; -1: none
  // answers), and whether node i is a master now (ROLE).
  int master_of(uint16_t slot) const;
  bool is_master(size_t i) const;
  // Waits until every live node's CLUSTER INFO says cluster_state:ok; false after timeout_ms.
  bool wait_ok(int timeout_ms) const;

 private:
  std::string dir_;
  Options opts_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  bool ok_ = false;
  std::string why_;
};

// Started on first use, stopped at exit. nullptr-free: check ok().
RedisServer& shared_redis();
RedisCluster& shared_redis_cluster();
// 3 masters + 3 replicas, cluster-node-timeout 1000 ms (failover tests).
RedisCluster& shared_redis_replicated_cluster();

}  // namespace parley::testing
