#include "server/server.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <filesystem>
#include <future>
#include <thread>

#include "net/stream_connection.h"
#include "protocol/decoder.h"

namespace parley::server {

namespace {
constexpr auto kHubSweepPeriod = std::chrono::seconds(10);
constexpr int kDrainGraceMs = 2000;  // appends in flight
constexpr int kDrainCloseMs = 3000;  // close handshakes

size_t max_message_bytes_of(const ServerConfig& c) {
  size_t m = 64 * 1024;
  for (const auto& [id, t] : c.tenants) m = std::max<size_t>(m, t.max_message_bytes);
  return m;
}
}  // namespace

Server::Server(ServerConfig config) : config_(std::move(config)) {}

Server::~Server() { stop(); }

Status Server::start() {
  // 1. Stores.
  ephemeral_ = store::make_memory_store();
  if (config_.store == "memory") {
    durable_ = store::make_memory_store();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(config_.data_dir, ec);
    store::EmbeddedOptions eo;
    eo.dir = config_.data_dir + "/store";
    eo.fsync = config_.fsync == "always" ? store::FsyncMode::kAlways : store::FsyncMode::kNever;
    auto opened = store::open_embedded_store(eo);
    if (!opened) return opened.error();
    durable_ = std::move(*opened);
  }
  const hub::Stores stores{durable_.get(), ephemeral_.get()};

  // 2. Loops, metrics, tenants, hub, gateway, API.
  unsigned threads = config_.threads ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  loops_ = std::make_unique<runtime::LoopGroup>(threads);
  metrics_ = std::make_unique<metrics::Metrics>(threads);
  tenants_ = std::make_unique<session::TenantRegistry>(config_.tenants);
  hub_ = std::make_unique<hub::Hub>(*loops_, stores, *metrics_,
                                    hub::ShardOptions{config_.append_queue_limit, 100});
  session::GatewayOptions go;
  go.heartbeat_ms = config_.heartbeat_ms;
  go.hello_timeout_ms = config_.hello_timeout_ms;
  go.max_connections = config_.max_connections;
  gateway_ = std::make_unique<session::Gateway>(*loops_, *tenants_, *hub_, stores, *metrics_, go);
  api_ = std::make_unique<api::HttpApi>(*tenants_, *hub_, *gateway_, stores, *metrics_);

  using metrics::Scraped;
  using Samples = std::vector<metrics::Metrics::Sample>;
  metrics_->set_source(Scraped::connections, [this](Samples& out) {
    tenants_->for_each([&out](const session::TenantRuntime& t) {
      out.push_back({t.config.id, static_cast<int64_t>(t.connections.load(std::memory_order_relaxed))});
    });
  });
  metrics_->set_source(Scraped::messages, [this](Samples& out) {
    tenants_->for_each([&out](const session::TenantRuntime& t) {
      out.push_back({t.config.id, static_cast<int64_t>(t.messages.load(std::memory_order_relaxed))});
    });
  });
  metrics_->set_source(Scraped::sockets, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(gateway_->sessions())});
  });
  metrics_->set_source(Scraped::append_queue_depth, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(hub_->inflight())});
  });
  metrics_->set_source(Scraped::store_pending, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(durable_->pending())});
  });
  metrics_->set_source(Scraped::channels, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(hub_->channel_count())});
  });

  // 3. Listeners.
  const size_t hard_limit = 4 * max_message_bytes_of(config_);
  http_opts_.ws_max_message_bytes = hard_limit;
  http_opts_.max_body_bytes = hard_limit;
  http_opts_.handler = api_.get();
  // The tenant is known only at hello, so the handshake refuses an Origin only
  // when no tenant could accept it; hello then checks the tenant's own list.
  std::vector<std::string> origins;
  bool any_origin = false;
  for (const auto& [id, t] : config_.tenants) {
    if (t.allowed_origins.empty()) any_origin = true;
    origins.insert(origins.end(), t.allowed_origins.begin(), t.allowed_origins.end());
  }
  if (!any_origin) {
    http_opts_.origin_ok = [origins](std::string_view o) {
      return std::find(origins.begin(), origins.end(), o) != origins.end();
    };
  }
  http_opts_.on_websocket = [this](std::shared_ptr<net::WsConnection> ws) {
    if (!gateway_->admit()) return ws->close(1013, "server full");
    gateway_->adopt(ws);
  };

  loops_->start();
  auto http = net::listen_tcp(*loops_, config_.listen, [this](boost::asio::ip::tcp::socket s, unsigned loop) {
    // A connection slot is taken at the WebSocket upgrade; plain HTTP
    // requests are short-lived and bounded by their timeouts.
    auto session = std::make_shared<net::HttpSession>(std::move(s), loop, metrics_->slot(loop), http_opts_);
    session->start();
  });
  if (!http) return http.error();
  http_listener_ = std::move(*http);
  if (!config_.tcp_listen.empty()) {
    auto tcp = net::listen_tcp(*loops_, config_.tcp_listen,
                               [this, hard_limit](boost::asio::ip::tcp::socket s, unsigned loop) {
      if (!gateway_->admit()) return;
      gateway_->adopt(std::make_shared<net::TcpConnection>(std::move(s), loop, metrics_->slot(loop),
                                                           hard_limit, net::Transport::kTcp));
    });
    if (!tcp) return tcp.error();
    tcp_listener_ = std::move(*tcp);
  }
  if (!config_.unix_listen.empty()) {
    auto ux = net::listen_unix(*loops_, config_.unix_listen,
                               [this, hard_limit](boost::asio::local::stream_protocol::socket s, unsigned loop) {
      if (!gateway_->admit()) return;
      gateway_->adopt(std::make_shared<net::UnixConnection>(std::move(s), loop, metrics_->slot(loop),
                                                            hard_limit, net::Transport::kUnix));
    });
    if (!ux) return ux.error();
    listeners_.push_back(std::move(*ux));
  }
  gateway_->start();
  sweep_timer_ = std::make_unique<boost::asio::steady_timer>(loops_->loop(0));
  loops_->run_on(0, [this] { arm_hub_sweep(); });
  return Status::ok();
}

void Server::arm_hub_sweep() {
  sweep_timer_->expires_after(kHubSweepPeriod);
  sweep_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    hub_->sweep();
    arm_hub_sweep();
  });
}

uint16_t Server::http_port() const { return http_listener_ ? http_listener_->port() : 0; }
uint16_t Server::tcp_port() const { return tcp_listener_ ? tcp_listener_->port() : 0; }

int Server::run_until_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("signal {} received: draining", sig);
  stop();
  return 0;
}

void Server::stop() {
  if (stopped_ || !loops_) return;
  stopped_ = true;
  // 1. Stop accepting.
  if (api_) api_->set_draining();
  if (http_listener_) http_listener_->stop();
  if (tcp_listener_) tcp_listener_->stop();
  for (auto& l : listeners_) l->stop();
  // 2. Refuse new work, let the appends in flight finish and their acks reach
  // the sessions, then tell every client and close behind what is queued.
  gateway_->begin_drain();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainGraceMs);
  while (hub_->inflight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int round = 0; round < 2; ++round) {  // shard outboxes, then the loops they post to
    std::promise<void> passed;
    gateway_->on_every_loop([] {}, [&passed] { passed.set_value(); });
    passed.get_future().wait_for(std::chrono::seconds(2));
  }
  std::promise<void> told;
  gateway_->drain([&told] { told.set_value(); });
  told.get_future().wait_for(std::chrono::seconds(5));
  const auto closed_by = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainCloseMs);
  while (gateway_->sessions() > 0 && std::chrono::steady_clock::now() < closed_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (gateway_->sessions() > 0) {
    std::promise<void> aborted;
    gateway_->abort_remaining([&aborted] { aborted.set_value(); });
    aborted.get_future().wait_for(std::chrono::seconds(5));
  }
  // 3. Flush the store, then stop the loops and release in reverse order.
  durable_->flush();
  if (sweep_timer_) {
    loops_->run_on(0, [this] { sweep_timer_->cancel(); });
  }
  loops_->stop();
  spdlog::info("stopped: {} appends were in flight", hub_->inflight());
}

}  // namespace parley::server
