// The Server owns every component and starts them in dependency order:
// store -> loops -> hub -> gateway -> HTTP API -> listeners; it stops them in
// reverse, draining first (bye to clients, in-flight appends flushed).
#pragma once

#include <memory>
#include <vector>

#include "api/http_api.h"
#include "metrics/metrics.h"
#include "session/gateway.h"
#include "session/tenant_registry.h"
#include "hub/hub.h"
#include "net/http_session.h"
#include "net/listener.h"
#include "runtime/loop_group.h"
#include "server/config.h"
#include "store/store.h"

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
  // Every kHubSweepPeriod on loop 0: lets the shards drop idle channels.
  void arm_hub_sweep();

  ServerConfig config_;
  std::unique_ptr<store::Store> durable_;
  std::unique_ptr<store::Store> ephemeral_;
  std::unique_ptr<runtime::LoopGroup> loops_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<session::TenantRegistry> tenants_;
  std::unique_ptr<hub::Hub> hub_;
  std::unique_ptr<session::Gateway> gateway_;
  std::unique_ptr<api::HttpApi> api_;
  net::HttpSessionOptions http_opts_;
  std::vector<std::unique_ptr<net::Listener>> listeners_;
  std::unique_ptr<net::Listener> http_listener_, tcp_listener_;
  std::unique_ptr<boost::asio::steady_timer> sweep_timer_;
  bool stopped_ = false;
};

}  // namespace parley::server
