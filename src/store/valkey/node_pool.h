// A few pipelined connections to one Valkey/Redis node, spread over the
// server's event loops (connection i lives on loop (first_loop + i) mod loops).
//
// A caller picks a connection by a stable hash (the store uses the channel), so
// every command of one channel goes down one connection and its replies come
// back in the order it was sent.
//
// Thread: any thread may call run(); the connection itself is touched only on
// its loop. The counters may be read from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loop_group.h"
#include "store/valkey/resp_connection.h"

namespace parley::store::valkey {

class NodePool {
 public:
  NodePool(runtime::LoopGroup& loops, HostPort addr, size_t size, unsigned first_loop,
           const ConnectionOptions& opts);

  // Runs fn(connection) on the loop of connection `hash % size`.
  void run(size_t hash, std::function<void(RespConnection&)> fn);

  // Closes every connection on its loop and waits (at most timeout_ms) for it.
  void close(int timeout_ms);

  const std::string& name() const { return name_; }  // "ip:port"
  const HostPort& address() const { return addr_; }
  size_t queued() const;
  size_t in_flight() const;
  bool down() const;  // some connection's last attempt failed (no reply since)
  bool up() const;    // some connection has had a reply since its last failure
  // A PING on the first connection: the node is tried (and up() can turn true)
  // before any traffic; the connection then keeps reconnecting by itself.
  void probe();
  // The node's config epoch as the cluster's map last gave it (0: not known, or
  // no cluster). It names the feed channels served there (ValkeyStore::feed_name).
  uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
  void set_epoch(uint64_t e) { epoch_.store(e, std::memory_order_relaxed); }

 private:
  struct Slot {
    unsigned loop;
    std::shared_ptr<RespConnection> conn;
  };
  runtime::LoopGroup& loops_;
  HostPort addr_;
  std::string name_;
  std::vector<Slot> slots_;
  std::atomic<uint64_t> epoch_{0};
};

}  // namespace parley::store::valkey
