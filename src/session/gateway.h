// The gateway: turns accepted connections into client sessions and keeps, per
// loop, the sessions living there (for heartbeats, hello deadlines, direct
// messages and draining). Each LoopSessions is touched only on its loop.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "metrics/metrics.h"
#include "events/event_service.h"
#include "tenant/tenant_registry.h"
#include "hub/hub.h"
#include "net/connection.h"
#include "runtime/gate.h"
#include "runtime/loop_group.h"
#include "session/connection_traffic.h"
#include "session/hook_gate.h"

namespace parley::session {

class ClientSession;
class Moderation;

struct GatewayOptions {
  uint32_t heartbeat_ms = 25000;
  uint32_t hello_timeout_ms = 10000;
  uint32_t max_connections = 19000;  // the whole process: stays under the fd limit
  uint32_t preauth_frame_bytes = 8 * 1024;  // largest frame before `welcome`
  int drain_reconnect_ms = 500;
};

class Gateway {
 public:
  Gateway(runtime::LoopGroup& loops, TenantRegistry& tenants, hub::Hub& hub, hub::Stores stores,
          metrics::Metrics& metrics, GatewayOptions opts);
  ~Gateway();

  // At accept (any loop): false while draining (the socket is then closed).
  // An accepted socket takes no max_connections slot until it authenticates:
  // until then it holds a net::PreauthTicket.
  bool accepting() const { return !draining(); }
  // At hello, or at an HTTP connection's first whole request (any loop):
  // takes a process-wide max_connections slot, or counts the refusal.
  bool take_slot();
  void release_slot() { admitted_.fetch_sub(1, std::memory_order_relaxed); }
  // Slots taken: authenticated sessions plus HTTP connections past a request.
  size_t admitted() const { return admitted_.load(std::memory_order_relaxed); }
  size_t authenticated_sessions() const { return authenticated_.load(std::memory_order_relaxed); }
  // On the connection's loop: wraps it in a session and starts it. A session
  // that authenticates takes a slot (take_slot), given back when it closes.
  void adopt(std::shared_ptr<net::Connection> conn);

  // Starts the per-loop sweeps (hello deadlines, heartbeats).
  void start();
  // Drain, step 1: new pub/state/join get `unavailable` (retry after
  // reconnect_ms) so that the appends in flight can finish and be acked.
  void begin_drain() { draining_.store(true); }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }
  // Drain, step 2: queues `bye` (draining) behind what each session already
  // has queued and closes it; `done` runs once every loop has done so.
  void drain(std::function<void()> done);
  // Drain, step 3: no session is adopted from now on; `on_empty` runs once
  // every session has closed (on the loop of the last one, or here). Once.
  void when_sessions_closed(std::function<void()> on_empty) { sessions_.close(std::move(on_empty)); }
  // A reload removed `tenant`: each of its sessions gets `bye` (tenant_removed)
  // behind what it has queued and is closed (4001). `done` gets their count,
  // on the loop that finished last. Any thread.
  void close_tenant(const TenantRuntime* tenant, std::function<void(size_t)> done);
  // Drain, last step: drops the connections whose peers have not completed the
  // close (each connection and its session hold one another until it finishes).
  void abort_remaining(std::function<void()> done);

  // POST /v1/send: a `direct` frame to every connection of (tenant, user).
  // `done` gets the count, on reply_loop.
  void send_direct(const TenantRuntime* tenant, std::string user, std::string body,
                   unsigned reply_loop, std::function<void(size_t)> done);
  // POST /v1/send with `conn`: the same to one connection (the `conn` of its
  // welcome) if it is open and belongs to `tenant`; `done` gets 0 or 1.
  void send_direct_to_conn(const TenantRuntime* tenant, uint64_t conn, std::string body,
                           unsigned reply_loop, std::function<void(size_t)> done);

  // PROTOCOL.md "Moderation": every connection of (tenant, user) on this node
  // joined to `ch` leaves it and gets a `kicked` frame with `reason`; `done`
  // gets their count, on reply_loop. Any thread. (Moderation::kick also tells
  // the other nodes.)
  void kick(std::string tenant, std::string user, std::string ch, std::string reason,
            unsigned reply_loop, std::function<void(size_t)> done);

  size_t sessions() const { return sessions_.count(); }

  // The admin's listing (connection_traffic.h): the n open connections sent
  // the most since the previous call, and the totals by form. `done` runs on
  // the loop that finished last. Any thread.
  void connection_traffic(size_t n, ConnectionTrafficDone done);

  // For sessions (on their loop).
  TenantRegistry& tenants() { return tenants_; }
  hub::Hub& hub() { return hub_; }
  // The event pipeline; null until the server sets it (before the loops start).
  events::EventService* events() { return events_; }
  void set_events(events::EventService* events) { events_ = events; }
  // The synchronous hooks (PROTOCOL.md "Hooks"); null when none is wired (before the loops start).
  HookGate* hooks() { return hooks_; }
  void set_hooks(HookGate* hooks) { hooks_ = hooks; }
  // Mutes, bans and kicks (session/moderation.h); null when none is wired (before the loops start).
  Moderation* moderation() { return moderation_; }
  void set_moderation(Moderation* m) { moderation_ = m; }
  metrics::Metrics& metrics() { return metrics_; }
  const GatewayOptions& options() const { return opts_; }
  void on_authenticated(ClientSession& s);
  void on_session_closed(ClientSession& s);

 private:
  struct LoopSessions {
    explicit LoopSessions(boost::asio::io_context& ctx) : sweep(ctx) {}
    std::unordered_map<uint64_t, std::shared_ptr<ClientSession>> by_conn;
    std::unordered_multimap<std::string, uint64_t> by_user;  // tenant '\x1f' user
    boost::asio::steady_timer sweep;
    uint64_t sweeps = 0;  // picks the slot of sessions each sweep pings
  };
  struct DirectTo {
    std::string user;   // every connection of this user, or
    uint64_t conn = 0;  // this one connection (non-zero)
  };
  void deliver_direct(const TenantRuntime* tenant, DirectTo to, std::string body,
                      unsigned reply_loop, std::function<void(size_t)> done);
  void arm_sweep(unsigned loop);
  void run_sweep(unsigned loop);

  runtime::LoopGroup& loops_;
  TenantRegistry& tenants_;
  hub::Hub& hub_;
  events::EventService* events_ = nullptr;
  HookGate* hooks_ = nullptr;
  Moderation* moderation_ = nullptr;
  hub::Stores stores_;
  metrics::Metrics& metrics_;
  GatewayOptions opts_;
  std::vector<std::unique_ptr<LoopSessions>> per_loop_;
  std::atomic<uint64_t> next_conn_id_{1};
  runtime::Gate sessions_;  // one unit per adopted session, left when it closes
  std::atomic<size_t> admitted_{0};
  std::atomic<size_t> authenticated_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace parley::session
