// Which Valkey Cluster node serves each slot, kept current by one thread: the
// valkey store's only rediscovery (docs/architecture.md "Following a failover").
//
// Anything that suggests the map is stale asks for a refresh with request(): a
// connection that failed or fell silent, CLUSTERDOWN, MOVED, a feed subscription
// the node took away. The thread runs one discovery at a time, at most one per
// min_interval_ms however many ask, and also by itself: every down_refresh_ms
// while some node the map uses does not answer (a hung or dead master says
// nothing, so waiting for an answer would wait for ever), else every
// idle_refresh_ms. A discovery asks the known nodes (the ones that answer first,
// silent ones last) for CLUSTER NODES and merges a few views by config epoch
// (cluster_map.h merge_views), then hands the result to `apply`.
//
// Threads: request() and the counters from any thread, cheap and never blocking;
// `apply` and `suspect` run on the topology thread. start() and stop() from the
// owner (the store), stop() before the owner goes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "store/valkey/cluster_map.h"

namespace parley::store::valkey {

class Topology {
 public:
  struct Options {
    int ask_timeout_ms = 1000;        // per node asked
    int min_interval_ms = 100;        // between two discoveries
    int down_refresh_ms = 250;        // while some node of the map does not answer
    int idle_refresh_ms = 5000;       // otherwise
    size_t views = 2;                 // answers merged per discovery
  };
  struct Hooks {
    // A fresh map (every slot a view covered); called on the topology thread.
    std::function<void(const ClusterView&)> apply;
    // Whether `node` is known not to answer (asked last); whether any node the
    // current map routes to does not answer (the fast refresh).
    std::function<bool(const HostPort& node)> silent;
    std::function<bool()> degraded;
  };

  Topology(std::vector<HostPort> seeds, Options opts, Hooks hooks);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // One discovery now, on the calling thread (open, before the thread runs).
  Result<ClusterView> discover_once();
  void start();
  void stop();
  // Any thread: a refresh soon (coalesced, rate-limited).
  void request();

  uint64_t runs() const { return runs_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  void run();
  std::vector<HostPort> ask_order();

  Options opts_;
  Hooks hooks_;
  std::mutex mu_;  // guards known_, wanted_, stop_
  std::condition_variable cv_;
  std::vector<HostPort> known_;  // seeds, then every node a view named
  bool wanted_ = false;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<uint64_t> runs_{0}, failures_{0};
};

}  // namespace parley::store::valkey
