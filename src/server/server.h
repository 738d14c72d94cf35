// The Server owns every component. start() runs named steps in dependency
// order: stores -> loops (and metrics) -> services (tenants, hub, gateway, HTTP
// API) -> metric sources -> loop threads -> listeners -> sweeps; stop() undoes
// them in reverse: sweeps -> listeners -> drain (hub requests answered, bye to
// every session, sessions closed) -> loop threads -> store flush. Waits are on
// completions (runtime::Gate, run_on_every_loop), never on a polled count.
//
// start(), stop() and run_until_signal() run on one thread that is not a loop.
// A config reload (SIGHUP, or POST /admin/api/reload) runs on that thread or on
// the reload worker, one at a time, never on a loop; it touches the running
// server only through TenantRegistry::apply (snapshots the loops read without
// a lock) and the gateway's close_tenant.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/http_api.h"
#include "metrics/metrics.h"
#include "session/gateway.h"
#include "session/moderation.h"
#include "tenant/tenant_registry.h"
#include "events/engine.h"
#include "cluster/cluster.h"
#include "hub/hub.h"
#include "net/http_session.h"
#include "net/listener.h"
#include "runtime/loop_group.h"
#include "server/config.h"
#include "store/embedded_store.h"
#include "store/memory_store.h"
#include "store/store.h"
#include "store/valkey/valkey_store.h"
#include "hooks/hook_service.h"
#include "upstream/forwarder.h"

namespace parley::server {

// What a reload did, or why it changed nothing.
struct ReloadOutcome {
  Status status;  // an error: nothing changed
  std::vector<std::string> added, removed, changed, restart_required;
  size_t closed_connections = 0;  // sessions of removed tenants, sent bye
  // The answer of POST /admin/api/reload: {"ok":true,...} or {"code","msg"}.
  std::string json() const;
};

class Server {
 public:
  // `config_path`: the file reload() reads again; empty: reload refuses.
  explicit Server(ServerConfig config, std::string config_path = {});
  ~Server();

  // Opens the store and starts listening. Error: nothing is left running.
  Status start();
  // Blocks until SIGTERM/SIGINT, then drains and stops; each SIGHUP meanwhile
  // reloads the config. Returns the exit code.
  int run_until_signal();
  // Reads the config file again and applies what may change at runtime. Not on
  // a loop; blocks while the removed tenants' sessions are told. One at a time.
  ReloadOutcome reload();
  // Drains and stops (idempotent; any thread but a loop's).
  void stop();

  uint16_t http_port() const;
  // Whether the durable store answers (only the valkey store can start without:
  // a node is not ready, and /healthz is 503, until it does).
  bool store_answers() const;
  uint16_t tcp_port() const;

 private:
  // start() steps, in order.
  Status open_stores();
  void create_loops();
  // server.loop_slice_us on every loop thread (runtime/thread_slice.h).
  void set_loop_slices();
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
  // The reload worker, for reloads asked over HTTP (a loop must not read files).
  void reload_async(std::function<void(int status, std::string body)> done);
  void stop_reload_worker();
  Status open_valkey_store();

  // Every min(kHubSweepPeriod, channel_idle_s / 2) on loop 0: the shards drop idle
  // channels, the ephemeral store old history and forgotten channels.
  void arm_hub_sweep();
  // Loop 0, after the hub's sweep: the ephemeral store's sweep, one store shard
  // per task, then the budget and the trim, then the next arm_hub_sweep().
  void sweep_ephemeral(int64_t now_ms, size_t shard);
  int64_t idle_ms() const { return int64_t{config_.channel_idle_s} * 1000; }
  // How channels and topic partitions follow a store that numbers them.
  seqlog::Options follow_options() const {
    return seqlog::Options{std::chrono::milliseconds(config_.valkey.fanout_gap_ms),
                           config_.valkey.fanout_max_held, config_.valkey.fanout_fill_page};
  }
  // Loop 0, after the sweeps: once many channels have been dropped, starts a
  // malloc_trim on trimmer_ (it walks every free list: not a loop's work).
  void return_freed_memory();
  size_t peak_channels_ = 0;  // loop 0: most channels held since the last trim
  std::thread trimmer_;                // the last trim; joined by the next one and by stop()
  std::atomic<bool> trimming_{false};  // a trim is running: don't start another

  ServerConfig config_;
  const std::string config_path_;
  std::mutex reload_mu_;  // one reload at a time; never taken on a loop
  std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<std::function<void()>> jobs_;  // reloads asked over HTTP, bounded
  bool jobs_stopping_ = false;
  std::thread reload_worker_;
  std::unique_ptr<store::Store> durable_;
  std::unique_ptr<store::MemoryStore> ephemeral_;
  store::EmbeddedStore* embedded_ = nullptr;  // durable_, when it is the embedded store
  store::valkey::ValkeyStore* valkey_ = nullptr;  // durable_, when it is the valkey store
  // The other nodes of a store they share (valkey); null: this node alone.
  std::unique_ptr<cluster::Cluster> cluster_;
  std::unique_ptr<runtime::LoopGroup> loops_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<TenantRegistry> tenants_;
  std::unique_ptr<hub::Hub> hub_;
  std::unique_ptr<events::Engine> events_;  // topics, groups, leaderboards (on the durable store)
  std::unique_ptr<upstream::Forwarder> forwarder_;  // only when a namespace has an upstream
  std::unique_ptr<hooks::HookService> hooks_;  // PROTOCOL.md "Hooks": asked only where configured
  std::unique_ptr<session::Gateway> gateway_;
  std::unique_ptr<session::Moderation> moderation_;  // PROTOCOL.md "Moderation"
  std::unique_ptr<api::HttpApi> api_;
  std::shared_ptr<net::TlsContext> tls_context_;  // server.tls_cert / tls_key, when a listener uses TLS
  net::HttpSessionOptions http_opts_;
  std::vector<std::unique_ptr<net::Listener>> listeners_;
  std::unique_ptr<net::Listener> http_listener_, tcp_listener_;
  std::unique_ptr<boost::asio::steady_timer> sweep_timer_;
  bool sweeps_stopped_ = false;  // loop 0
  bool stopped_ = false;
};

}  // namespace parley::server
