// The Server owns every component. start() runs named steps in dependency
// order: stores -> loops (and metrics) -> services (tenants, hub, gateway, HTTP
// API) -> metric sources -> loop threads -> listeners -> sweeps; stop() undoes
// them in reverse: sweeps -> listeners -> drain (hub requests answered, bye to
// every session, sessions closed) -> loop threads -> store flush. Waits are on
// completions (runtime::Gate, run_on_every_loop), never on a polled count.
//
// start(), stop() and run_until_signal() run on one thread that is not a loop.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "api/http_api.h"
#include "metrics/metrics.h"
#include "session/gateway.h"
#include "session/tenant_registry.h"
#include "events/engine.h"
#include "hub/hub.h"
#include "net/http_session.h"
#include "net/listener.h"
#include "runtime/loop_group.h"
#include "server/config.h"
#include "store/embedded_store.h"
#include "store/memory_store.h"
#include "store/store.h"
#include "upstream/forwarder.h"

namespace parley::server {

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Opens the store and starts listening. Error: nothing is left running.
  Status start();
  // Blocks until SIGTERM/SIGINT, then drains and stops. Returns the exit code.
  int run_until_signal();
  // Drains and stops (idempotent; any thread but a loop's).
  void stop();

  uint16_t http_port() const;
  uint16_t tcp_port() const;

 private:
  // start() steps, in order.
  Status open_stores();
  void create_loops();
  void create_services();
  void register_metrics();
  Status start_listeners();
  void start_sweeps();
  // stop() steps, in order (the reverse of start).
  void stop_sweeps();
  void stop_listeners();
  void drain_requests();
  void drain_sessions();
  void drain_upstream();
  void flush_stores();

  // Every min(kHubSweepPeriod, channel_idle_s / 2) on loop 0: the shards drop idle
  // channels, the ephemeral store old history and forgotten channels.
  void arm_hub_sweep();
  int64_t idle_ms() const { return int64_t{config_.channel_idle_s} * 1000; }
  // Loop 0, after the sweeps: once many channels have been dropped, starts a
  // malloc_trim on trimmer_ (it walks every free list: not a loop's work).
  void return_freed_memory();
  size_t peak_channels_ = 0;  // loop 0: most channels held since the last trim
  std::thread trimmer_;                // the last trim; joined by the next one and by stop()
  std::atomic<bool> trimming_{false};  // a trim is running: don't start another

  ServerConfig config_;
  std::unique_ptr<store::Store> durable_;
  std::unique_ptr<store::MemoryStore> ephemeral_;
  store::EmbeddedStore* embedded_ = nullptr;  // durable_, when it is the embedded store
  std::unique_ptr<runtime::LoopGroup> loops_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<session::TenantRegistry> tenants_;
  std::unique_ptr<hub::Hub> hub_;
  std::unique_ptr<events::Engine> events_;  // topics, groups, leaderboards (on the durable store)
  std::unique_ptr<upstream::Forwarder> forwarder_;  // only when a namespace has an upstream
  std::unique_ptr<session::Gateway> gateway_;
  std::unique_ptr<api::HttpApi> api_;
  std::shared_ptr<net::TlsContext> tls_context_;  // server.tls_cert / tls_key, when a listener uses TLS
  net::HttpSessionOptions http_opts_;
  std::vector<std::unique_ptr<net::Listener>> listeners_;
  std::unique_ptr<net::Listener> http_listener_, tcp_listener_;
  std::unique_ptr<boost::asio::steady_timer> sweep_timer_;
  bool stopped_ = false;
};

}  // namespace parley::server
