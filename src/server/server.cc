#include "server/server.h"

#include <malloc.h>
#include <sys/resource.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <boost/asio/signal_set.hpp>
#include <filesystem>
#include <future>
#include <map>
#include <thread>

#include "common/clock.h"
#include "common/json_writer.h"
#include "events/topic_channel.h"
#include "net/preauth_budget.h"
#include "runtime/every_loop.h"
#include "runtime/thread_slice.h"
#include "server/reload_plan.h"
#include "server/dynamo_options.h"
#include "net/stream_connection.h"
#include "store/embedded_store.h"
#include "store/memory_store.h"
#include "cluster/valkey_cluster.h"
#include "session/moderation.h"
#include "store/valkey/valkey_store.h"
#include "protocol/decoder.h"

namespace parley::server {

namespace {
// Descriptors kept for everything but client sockets: the store (RocksDB's
// max_open_files of 256, WALs, MANIFEST, directories), listeners, the loops' epoll
// and eventfds, upstream connections. Without them, idle sockets at the process
// limit left RocksDB no descriptor for its next WAL (issue 11, finding 2).
constexpr uint64_t kFdsKeptFromSockets = 384;

// max_connections and preauth_max_connections, lowered so that together they
// fit in what RLIMIT_NOFILE leaves for sockets: the unauthenticated budget
// first, down to a floor, then max_connections.
struct SocketLimits {
  uint32_t authenticated;
  uint32_t preauth;
};
SocketLimits socket_limits(uint32_t max_connections, uint32_t preauth) {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
    return {max_connections, preauth};
  }
  const uint64_t room = rl.rlim_cur > kFdsKeptFromSockets + 128 ? rl.rlim_cur - kFdsKeptFromSockets : 128;
  if (uint64_t{max_connections} + preauth <= room) return {max_connections, preauth};
  constexpr uint64_t kPreauthFloor = 256;
  const uint64_t left = room > max_connections ? room - max_connections : 0;
  const auto p = static_cast<uint32_t>(
      std::min<uint64_t>(preauth, std::max<uint64_t>(left, std::min<uint64_t>(kPreauthFloor, room / 2))));
  const auto m = static_cast<uint32_t>(std::min<uint64_t>(max_connections, room - p));
  // The defaults (19,000 + 2,048) exceed a 20,000-file limit by design: the
  // pre-auth budget takes what max_connections leaves, which is worth a line but
  // not a warning. Only a lowered max_connections turns players away.
  const auto level = m < max_connections ? spdlog::level::warn : spdlog::level::info;
  spdlog::log(level,
              "server.max_connections {} and preauth_max_connections {} lowered to {} and {}: "
              "the process may open {} files and keeps {} for the store and the server itself",
              max_connections, preauth, m, p, static_cast<uint64_t>(rl.rlim_cur), kFdsKeptFromSockets);
  return {m, p};
}
}  // namespace

namespace {
constexpr auto kHubSweepPeriod = std::chrono::seconds(10);
constexpr size_t kTrimAfterChannels = 10'000;
constexpr int kDrainGraceMs = 2000;  // appends in flight
constexpr int kDrainCloseMs = 3000;  // close handshakes
constexpr int kDrainUpstreamMs = 2000;  // events still queued for app servers

// The largest tenant max_message_bytes the config accepts (server/config.cc):
// HttpApi::check_header lowers the body limit to the caller's tenant, so a
// reload that raises a tenant's limit needs no new listener option.
constexpr size_t kLargestMessageBytes = 16u << 20;
constexpr size_t kMaxQueuedReloads = 4;
constexpr auto kCloseTenantWait = std::chrono::seconds(5);
}  // namespace

Server::Server(ServerConfig config, std::string config_path)
    : config_(std::move(config)), config_path_(std::move(config_path)) {}

Server::~Server() { stop(); }

// Start: each step needs only the ones before it; stop() undoes them in
// reverse. docs/architecture.md "Start and stop order" lists the same steps.
Status Server::start() {
  if (Status s = upstream::Forwarder::validate(config_.tenants); !s) return s;
  if (Status s = open_stores(); !s) return s;
  create_loops();
  if (Status s = open_valkey_store(); !s) {
    loops_.reset();  // nothing else started: stop() has nothing to undo
    return s;
  }
  create_services();
  register_metrics();
  loops_->start();
  set_loop_slices();
  events_->start(*tenants_);  // boards rebuild and push from now
  if (Status s = start_listeners(); !s) return s;
  start_sweeps();
  return Status::ok();
}

bool Server::store_answers() const { return !valkey_ || valkey_->health().writable; }

namespace {

// [server] topic_log, or when unset the segment log, except on a data directory
// whose store was written before the segment log was the default (a RocksDB
// database and no segments folder): its topics stay in RocksDB, where their
// history is readable (docs/operations.md "Topic log").
store::TopicLog topic_log_for(const std::string& configured, const std::string& store_dir) {
  if (configured == "segment") return store::TopicLog::kSegment;
  if (configured == "rocksdb") return store::TopicLog::kRocksDb;
  std::error_code ec;
  if (std::filesystem::exists(store_dir + "/CURRENT", ec) &&
      !std::filesystem::exists(store_dir + "/segments", ec)) {
    spdlog::info("store: topic partitions stay in RocksDB: {} was written before topic_log = "
                 "\"segment\" was the default (set topic_log to choose; docs/operations.md "
                 "\"Topic log\")",
                 store_dir);
    return store::TopicLog::kRocksDb;
  }
  return store::TopicLog::kSegment;
}

}  // namespace

Status Server::open_stores() {
  // The stores forget an idle channel only after the hub has unloaded it.
  const int64_t forget_ms = 2 * idle_ms();
  ephemeral_ = std::make_unique<store::MemoryStore>(
      store::MemoryStoreOptions{config_.ephemeral_memory_bytes, forget_ms});
  if (config_.store == "memory") {
    durable_ = std::make_unique<store::MemoryStore>(store::MemoryStoreOptions{0, forget_ms});
    return Status::ok();
  }
  if (config_.store == "valkey") return Status::ok();  // on the loops: open_valkey_store
  std::error_code ec;
  std::filesystem::create_directories(config_.data_dir, ec);
  store::EmbeddedOptions eo;
  eo.dir = config_.data_dir + "/store";
  eo.fsync = config_.fsync == "always" ? store::FsyncMode::kAlways : store::FsyncMode::kNever;
  eo.accept_data_loss = config_.accept_data_loss;
  eo.topic_log = topic_log_for(config_.topic_log, eo.dir);
  eo.is_partition = [](const store::ChannelId& id) {
    return events::parse_partition_channel(id.channel).has_value();
  };
  eo.verify_bytes = config_.store_verify_bytes;
  eo.channel_idle_ms = forget_ms;
  auto opened = store::EmbeddedStore::open(eo);
  if (!opened) return opened.error();
  embedded_ = opened->get();
  durable_ = std::move(*opened);
  return Status::ok();
}

// The valkey store's connections live on the loops, so it opens once they exist
// (they start later; it connects on first use).
Status Server::open_valkey_store() {
  if (config_.store != "valkey") return Status::ok();
  store::valkey::ValkeyOptions vo;
  vo.nodes = config_.valkey.nodes;
  vo.cluster = config_.valkey.cluster;
  vo.partitions = config_.valkey.partitions;
  vo.pool_size = config_.valkey.pool_size;
  vo.command_timeout_ms = config_.valkey.command_timeout_ms;
  vo.topology_refresh_ms = config_.valkey.topology_refresh_ms;
  vo.wait_replicas = config_.valkey.wait_replicas;
  vo.wait_timeout_ms = config_.valkey.wait_timeout_ms;
  // With a persister (postgres.url or [dynamodb]) the WAL waits for its acknowledgements; the
  // script keeps only the hard cap (docs/operations.md, "The persister").
  const bool archived = !config_.postgres.url.empty() || config_.dynamodb.enabled;
  vo.wal_max_len = archived ? config_.valkey.wal_hard_cap : config_.valkey.wal_max_len;
  vo.postgres_url = config_.postgres.url;
  vo.postgres_readers = config_.postgres.readers;
  vo.postgres_timeout_ms = config_.postgres.timeout_ms;
  if (config_.dynamodb.enabled && config_.postgres.url.empty()) {
    auto d = dynamo_options(config_.dynamodb);
    if (!d) return d.error();
    vo.dynamodb = std::move(*d);
    vo.dynamodb_readers = config_.dynamodb.readers;
  }
  auto opened = store::valkey::ValkeyStore::open(*loops_, vo);
  if (!opened) return opened.error();
  valkey_ = opened->get();
  valkey_->set_script_latency_observer(
      [m = metrics_.get()](int64_t ns) { m->local().valkey_script.observe_ns(ns); });
  durable_ = std::move(*opened);
  // The nodes sharing the store hear each other through it.
  cluster_ = cluster::valkey_cluster(*valkey_);
  return Status::ok();
}

void Server::set_loop_slices() {
  const uint32_t us = config_.loop_slice_us;
  if (us == 0) return;
  runtime::run_on_every_loop(
      *loops_,
      [us](unsigned loop) {
        if (!runtime::set_thread_slice_us(us)) {
          spdlog::warn("loop {}: server.loop_slice_us {} not applied: {}", loop, us,
                       std::strerror(errno));
        }
      },
      [] {});
}

void Server::create_loops() {
  const unsigned threads =
      config_.threads ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  loops_ = std::make_unique<runtime::LoopGroup>(threads);
  metrics_ = std::make_unique<metrics::Metrics>(threads);
}

void Server::create_services() {
  const hub::Stores stores{durable_.get(), ephemeral_.get(), cluster_.get()};
  tenants_ = std::make_unique<TenantRegistry>(config_.tenants);
  hub_ = std::make_unique<hub::Hub>(*loops_, stores, *metrics_,
                                    hub::ShardOptions{config_.append_queue_limit, 100, idle_ms(),
                                                      follow_options(),
                                                      config_.valkey.presence_ttl_ms});
  // Only when some namespace has an upstream; the URLs were checked in start().
  auto api_key_of = [t = tenants_.get()](std::string_view id) {
    const TenantRuntime* rt = t->find(id);
    return rt ? rt->config().api_key : std::string();
  };
  if (auto f = upstream::Forwarder::create(*loops_, *hub_, *metrics_, config_.tenants, {},
                                           std::move(api_key_of));
      f && (*f)->active()) {
    forwarder_ = std::move(*f);
    hub_->set_upstream(forwarder_.get());
  }
  session::GatewayOptions go;
  go.heartbeat_ms = config_.heartbeat_ms;
  go.hello_timeout_ms = config_.hello_timeout_ms;
  const SocketLimits limits = socket_limits(config_.max_connections, config_.preauth_max_connections);
  go.max_connections = limits.authenticated;
  net::PreauthBudget::process().set_socket_limits(limits.preauth, config_.preauth_max_per_address);
  go.preauth_frame_bytes = config_.preauth_frame_bytes;
  net::PreauthBudget::process().set_limit(config_.preauth_memory_bytes);
  gateway_ = std::make_unique<session::Gateway>(*loops_, *tenants_, *hub_, stores, *metrics_, go);
  events_ = std::make_unique<events::Engine>(*loops_, *durable_, *metrics_, follow_options(), cluster_.get());
  gateway_->set_events(events_.get());
  hooks_ = std::make_unique<hooks::HookService>(*loops_, config_.tenants);
  gateway_->set_hooks(hooks_.get());
  // Mutes, bans and kicks reach every node through the cluster (one node alone: its own).
  moderation_ = std::make_unique<session::Moderation>(
      *loops_, cluster_ ? cluster_->sanctions() : cluster::in_process().sanctions(), *gateway_);
  gateway_->set_moderation(moderation_.get());
  api_ = std::make_unique<api::HttpApi>(*tenants_, *hub_, *gateway_, stores, *metrics_);
  if (!config_.admin_key.empty()) {
    api::AdminOptions ao;
    ao.key = config_.admin_key;
    ao.store_kind = config_.store;
    ao.threads = loops_->size();
    ao.reload = [this](std::function<void(int, std::string)> done) { reload_async(std::move(done)); };
    api_->enable_admin(std::move(ao));
  }
}

void Server::register_metrics() {
  using metrics::Scraped;
  using Samples = std::vector<metrics::Metrics::Sample>;
  metrics_->set_source(Scraped::connections, [this](Samples& out) {
    tenants_->for_each([&out](const TenantRuntime& t) {
      out.push_back({t.id, static_cast<int64_t>(t.connections.load(std::memory_order_relaxed))});
    });
  });
  metrics_->set_source(Scraped::messages, [this](Samples& out) {
    tenants_->for_each([&out](const TenantRuntime& t) {
      out.push_back({t.id, static_cast<int64_t>(t.messages.load(std::memory_order_relaxed))});
    });
  });
  metrics_->set_source(Scraped::events, [this](Samples& out) {
    // Every configured topic, 0 until its first use.
    std::map<std::string, int64_t, std::less<>> committed;
    for (const auto& t : events_->stats()) {
      committed[t->label] = static_cast<int64_t>(t->committed.load(std::memory_order_relaxed));
    }
    // The tenants as configured now (a reload may add topics): the registry's
    // snapshots, never config_, which the reload thread rewrites.
    tenants_->for_each([&](const TenantRuntime& rt) {
      for (const auto& [name, topic] : rt.config().topics) {
        const std::string label = rt.id + "/" + name;
        auto it = committed.find(label);
        out.push_back({label, it == committed.end() ? 0 : it->second});
      }
    });
  });
  metrics_->set_source(Scraped::consumer_lag, [this](Samples& out) {
    for (const auto& t : events_->stats()) {
      t->for_each_lag([&](const std::string& g, uint32_t p, uint64_t lag) {
        out.push_back({t->label + "/" + g + "/" + std::to_string(p), static_cast<int64_t>(lag)});
      });
    }
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
  metrics_->set_source(Scraped::http_connections, [this](Samples& out) {
    const size_t admitted = gateway_->admitted(), sessions = gateway_->authenticated_sessions();
    out.push_back({"", static_cast<int64_t>(admitted > sessions ? admitted - sessions : 0)});
  });
  metrics_->set_source(Scraped::preauth_bytes, [](Samples& out) {
    out.push_back({"", static_cast<int64_t>(net::PreauthBudget::process().held())});
  });
  metrics_->set_source(Scraped::preauth_sockets, [](Samples& out) {
    out.push_back({"", static_cast<int64_t>(net::PreauthBudget::process().sockets())});
  });
  metrics_->set_source(Scraped::preauth_shed, [](Samples& out) {
    const auto& b = net::PreauthBudget::process();
    out.push_back({"global", static_cast<int64_t>(b.shed_global())});
    out.push_back({"address", static_cast<int64_t>(b.shed_per_address())});
  });
  for (const auto& source : {std::pair{Scraped::mutes_active, cluster::SanctionKind::kMute},
                              std::pair{Scraped::bans_active, cluster::SanctionKind::kBan}}) {
    metrics_->set_source(source.first, [this, kind = source.second](Samples& out) {
      // Every configured tenant, 0 while it has none in force.
      const auto active = moderation_->active(kind, wall_ms());
      tenants_->for_each([&](const TenantRuntime& t) {
        int64_t n = 0;
        for (const auto& [tenant, count] : active) {
          if (tenant == t.id) n = count;
        }
        out.push_back({t.id, n});
      });
    });
  }
  if (forwarder_) forwarder_->register_metrics(*metrics_);
  hooks_->register_metrics(*metrics_);
  metrics_->set_source(Scraped::store_write_refused, [this](Samples& out) {
    const store::StoreHealth h = durable_->health();
    for (const char* reason : {"disk_full", "too_many_open_files", "io_error", "corruption",
                               "store_error", "unreachable"}) {
      out.push_back({reason, !h.writable && h.reason == reason ? 1 : 0});
    }
  });
  metrics_->set_source(Scraped::store_refusing_since, [this](Samples& out) {
    const store::StoreHealth h = durable_->health();
    out.push_back({"", h.writable ? 0 : h.since_ms / 1000});
  });
  metrics_->set_source(Scraped::store_epoch, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(durable_->health().epoch)});
  });
  metrics_->set_source(Scraped::store_data_loss_accepted, [this](Samples& out) {
    out.push_back({"", durable_->health().loss_accepted ? 1 : 0});
  });
  metrics_->set_source(Scraped::store_unreadable_reads, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(durable_->health().unreadable_reads)});
  });
  metrics_->set_source(Scraped::store_damaged_files, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(durable_->health().damaged_files)});
  });
  metrics_->set_source(Scraped::store_channels, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(embedded_ ? embedded_->channels_tracked() : 0)});
  });
  metrics_->set_source(Scraped::valkey_queued, [this](Samples& out) {
    if (!valkey_) return;
    for (const auto& n : valkey_->node_stats()) out.push_back({n.node, static_cast<int64_t>(n.queued)});
  });
  metrics_->set_source(Scraped::valkey_in_flight, [this](Samples& out) {
    if (!valkey_) return;
    for (const auto& n : valkey_->node_stats()) out.push_back({n.node, static_cast<int64_t>(n.in_flight)});
  });
  metrics_->set_source(Scraped::valkey_node_down, [this](Samples& out) {
    if (!valkey_) return;
    for (const auto& n : valkey_->node_stats()) out.push_back({n.node, n.down ? 1 : 0});
  });
  metrics_->set_source(Scraped::valkey_redirects, [this](Samples& out) {
    if (!valkey_) return;
    const auto r = valkey_->redirects();
    out.push_back({"moved", static_cast<int64_t>(r.moved)});
    out.push_back({"ask", static_cast<int64_t>(r.ask)});
    out.push_back({"tryagain", static_cast<int64_t>(r.tryagain)});
  });
  metrics_->set_source(Scraped::valkey_partition_up, [this](Samples& out) {
    if (!valkey_) return;
    for (const auto& [part, up] : valkey_->partition_stats()) out.push_back({part, up ? 1 : 0});
  });
  metrics_->set_source(Scraped::valkey_topology, [this](Samples& out) {
    if (!valkey_) return;
    const auto r = valkey_->redirects();
    out.push_back({"read", static_cast<int64_t>(r.rediscoveries)});
    out.push_back({"changed", static_cast<int64_t>(r.map_changes)});
  });
  metrics_->set_source(Scraped::valkey_wait_short, [this](Samples& out) {
    if (!valkey_) return;
    out.push_back({"", static_cast<int64_t>(valkey_->redirects().wait_short)});
  });
  metrics_->set_source(Scraped::ephemeral_channels, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(ephemeral_->channel_count())});
  });
  metrics_->set_source(Scraped::ephemeral_memory_bytes, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(ephemeral_->memory_bytes())});
  });
  metrics_->set_source(Scraped::ephemeral_evictions, [this](Samples& out) {
    out.push_back({"", static_cast<int64_t>(ephemeral_->budget_evictions())});
  });
}

Status Server::start_listeners() {
  if (config_.tcp_tls || config_.listen_tls) {
    auto ctx = net::TlsContext::load(config_.tls_cert, config_.tls_key);
    if (!ctx) return ctx.error();
    tls_context_ = std::move(*ctx);
  }
  if (config_.listen_tls) http_opts_.tls = tls_context_;
  // Connections start at the pre-auth frame limit; hello raises it to the
  // tenant's (ClientSession::on_hello).
  const size_t preauth_limit = config_.preauth_frame_bytes;
  http_opts_.ws_max_message_bytes = preauth_limit;
  http_opts_.max_body_bytes = 4 * kLargestMessageBytes;
  http_opts_.handler = api_.get();
  // The tenant is known only at hello, so the handshake refuses an Origin only
  // when no tenant (as configured now: reloads change it) could accept it;
  // hello then checks the tenant's own list.
  http_opts_.origin_ok = [t = tenants_.get()](std::string_view o) { return t->origin_allowed(o); };
  http_opts_.idle_timeout = std::chrono::milliseconds(config_.http_idle_timeout_ms);
  // An HTTP connection takes a max_connections slot at its first request;
  // before, and as a WebSocket before hello, it holds a PreauthTicket.
  http_opts_.take_slot = [this] { return gateway_->take_slot(); };
  http_opts_.release_slot = [this] { gateway_->release_slot(); };
  http_opts_.on_websocket = [this](std::shared_ptr<net::WsConnection> ws) {
    if (gateway_->draining()) return ws->close(1013, "server draining");
    gateway_->adopt(ws);
  };

  auto http = net::listen_tcp(*loops_, config_.listen, [this](boost::asio::ip::tcp::socket s, unsigned loop) {
    if (!gateway_->accepting()) return;
    auto ticket = net::PreauthBudget::process().admit(net::peer_address(s));
    auto session = std::make_shared<net::HttpSession>(std::move(s), loop, metrics_->slot(loop),
                                                      http_opts_, std::move(ticket));
    session->start();
  });
  if (!http) return http.error();
  http_listener_ = std::move(*http);
  std::shared_ptr<net::TlsContext> tcp_tls = config_.tcp_tls ? tls_context_ : nullptr;
  if (!config_.tcp_listen.empty()) {
    auto tcp = net::listen_tcp(*loops_, config_.tcp_listen,
                               [this, preauth_limit, tcp_tls](boost::asio::ip::tcp::socket s, unsigned loop) {
      if (!gateway_->accepting()) return;
      auto ticket = net::PreauthBudget::process().admit(net::peer_address(s));
      auto conn = std::make_shared<net::TcpConnection>(std::move(s), loop, metrics_->slot(loop),
                                                       preauth_limit, net::Transport::kTcp, tcp_tls);
      conn->hold_preauth(std::move(ticket));
      gateway_->adopt(std::move(conn));
    });
    if (!tcp) return tcp.error();
    tcp_listener_ = std::move(*tcp);
  }
  if (!config_.unix_listen.empty()) {
    auto ux = net::listen_unix(*loops_, config_.unix_listen,
                               [this, preauth_limit](boost::asio::local::stream_protocol::socket s, unsigned loop) {
      if (!gateway_->accepting()) return;
      auto conn = std::make_shared<net::UnixConnection>(std::move(s), loop, metrics_->slot(loop),
                                                        preauth_limit, net::Transport::kUnix);
      conn->hold_preauth(net::PreauthBudget::process().admit(net::kUnixPeer));
      gateway_->adopt(std::move(conn));
    });
    if (!ux) return ux.error();
    listeners_.push_back(std::move(*ux));
  }
  return Status::ok();
}

void Server::start_sweeps() {
  gateway_->start();
  moderation_->start();
  sweep_timer_ = std::make_unique<boost::asio::steady_timer>(loops_->loop(0));
  loops_->run_on(0, [this] { arm_hub_sweep(); });
}

void Server::arm_hub_sweep() {
  if (sweeps_stopped_) return;  // a sweep's last slice ran after stop_sweeps()
  // Often enough that an idle channel goes within ~1.5 x channel_idle_s.
  sweep_timer_->expires_after(std::min<std::chrono::milliseconds>(
      kHubSweepPeriod, std::chrono::seconds(config_.channel_idle_s) / 2));
  sweep_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    hub_->sweep();
    sweep_ephemeral(wall_ms(), 0);
  });
}

void Server::sweep_ephemeral(int64_t now_ms, size_t shard) {
  // One store shard per task: the loop (and the other loops' appends to that
  // shard) wait for one sixteenth of the ephemeral channels at most.
  if (shard < store::MemoryStore::shard_count()) {
    ephemeral_->sweep_shard(shard, now_ms);
    loops_->run_on(0, [this, now_ms, shard] { sweep_ephemeral(now_ms, shard + 1); });
    return;
  }
  ephemeral_->enforce_budget();
  return_freed_memory();
  arm_hub_sweep();
}

void Server::return_freed_memory() {
  // Channels the sweeps dropped free their state, but glibc keeps the pages of
  // freed small chunks in its arenas: after a churn of 1,000,000 channels the
  // process stayed at 1.1 GB RSS with no channel left, and 87 MB after one
  // malloc_trim. So once many channels have gone since the last trim, trim,
  // on a thread of its own. Not while channels churn, though: malloc_trim
  // holds each arena's lock while it walks that arena's free lists, and the
  // loops allocate from those arenas. With 500,000 channels churning (10,000
  // new per second) a trim per sweep stalled every loop for ~2 s each time.
  // Under steady churn the channels held stay near their peak and freed chunks
  // are reused by the next channels anyway; the memory is worth returning once
  // the set has collapsed (churn over), so trim only when it has shrunk to a
  // quarter of its peak since the last trim.
  const size_t held = hub_->channel_count() + ephemeral_->channel_count() +
                      (embedded_ ? embedded_->channels_tracked() : 0);
  peak_channels_ = std::max(peak_channels_, held);
  if (peak_channels_ - held < kTrimAfterChannels || held * 4 > peak_channels_) return;
  if (trimming_.exchange(true)) return;  // the previous trim is still running
  if (trimmer_.joinable()) trimmer_.join();  // finished: it cleared trimming_
  const size_t gone = peak_channels_ - held;
  peak_channels_ = held;
  trimmer_ = std::thread([this, gone] {
#ifdef __GLIBC__
    const int64_t start = steady_ns();
    malloc_trim(0);
    spdlog::debug("malloc_trim after {} channels went: {} ms", gone,
                  (steady_ns() - start) / 1'000'000);
#endif
    trimming_.store(false);
  });
}

uint16_t Server::http_port() const { return http_listener_ ? http_listener_->port() : 0; }
uint16_t Server::tcp_port() const { return tcp_listener_ ? tcp_listener_->port() : 0; }

int Server::run_until_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  int sig = 0;
  for (;;) {
    sigwait(&set, &sig);
    if (sig != SIGHUP) break;
    spdlog::info("SIGHUP received: reloading {}", config_path_);
    reload();  // logs what it did, or why it changed nothing
  }
  spdlog::info("signal {} received: draining", sig);
  stop();
  return 0;
}

std::string ReloadOutcome::json() const {
  if (!status) return error_json(status.error());
  std::string out;
  JsonWriter w(out);
  auto list = [&w](std::string_view key, const std::vector<std::string>& v) {
    w.key(key).begin_array();
    for (const auto& s : v) w.str(s);
    w.end_array();
  };
  w.begin_object().field_bool("ok", true);
  list("added", added);
  list("removed", removed);
  list("changed", changed);
  w.field_unum("closed_connections", closed_connections);
  list("restart_required", restart_required);
  w.end_object();
  return out;
}

ReloadOutcome Server::reload() {
  std::lock_guard lock(reload_mu_);
  ReloadOutcome out;
  auto refuse = [&out](Error e) {
    spdlog::error("config reload refused, nothing changed: {}", e.msg);
    out.status = std::move(e);
    return out;
  };
  if (config_path_.empty()) {
    return refuse({ErrorCode::kBadRequest,
                   "the server runs the demo configuration (no --config): nothing to reload"});
  }
  if (!tenants_ || stopped_) return refuse({ErrorCode::kUnavailable, "the server is not running"});
  auto file = load_config_file(config_path_);
  if (!file) return refuse(file.error());
  if (Status s = upstream::Forwarder::validate(file->tenants); !s) return refuse(s.error());
  ReloadPlan plan = plan_reload(config_, std::move(*file));
  for (const auto& [id, t] : plan.next.tenants) {
    if (!plan.next.admin_key.empty() && t.api_key == plan.next.admin_key) {
      return refuse({ErrorCode::kBadRequest,
                     "tenants." + id + ".api_key is the running server.admin_key"});
    }
  }
  const int64_t now = wall_ms();
  if (Status s = tenants_->check(plan.next.tenants, now); !s) return refuse(s.error());

  TenantChanges changes = tenants_->apply(plan.next.tenants, now);
  // The replaced index is freed once every loop has finished the task it was
  // in (a lookup never spans tasks).
  runtime::run_on_every_loop(*loops_, nullptr, [retired = std::move(changes.retired)] {});
  // config_ is read after start() only here (one reload at a time): loops
  // read the tenants through the registry.
  config_.tenants = plan.next.tenants;
  if (plan.next.log_level != config_.log_level) {
    config_.log_level = plan.next.log_level;
    spdlog::set_level(spdlog::level::from_str(config_.log_level));
  }
  for (TenantRuntime* rt : changes.removed_runtimes) {
    auto told = std::make_shared<std::promise<size_t>>();
    auto got = told->get_future();
    gateway_->close_tenant(rt, [told](size_t n) { told->set_value(n); });
    if (got.wait_for(kCloseTenantWait) == std::future_status::ready) out.closed_connections += got.get();
  }
  out.added = std::move(changes.added);
  out.removed = std::move(changes.removed);
  out.changed = std::move(changes.changed);
  out.restart_required = std::move(plan.restart_required);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  spdlog::info("config reloaded from {}: added {}; removed {} ({} connections sent bye); changed {}",
               config_path_, joined(out.added), joined(out.removed), out.closed_connections,
               joined(out.changed));
  if (!out.restart_required.empty()) {
    spdlog::warn("config reload: these changes take effect only after a restart: {}",
                 joined(out.restart_required));
  }
  return out;
}

void Server::reload_async(std::function<void(int, std::string)> done) {
  std::unique_lock lock(jobs_mu_);
  if (jobs_stopping_ || jobs_.size() >= kMaxQueuedReloads) {
    lock.unlock();
    return done(503, error_json(ErrorCode::kUnavailable, "too many reloads queued, or stopping"));
  }
  if (!reload_worker_.joinable()) {
    reload_worker_ = std::thread([this] {
      std::unique_lock l(jobs_mu_);
      for (;;) {
        jobs_cv_.wait(l, [this] { return jobs_stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        l.unlock();
        job();
        l.lock();
      }
    });
  }
  jobs_.push_back([this, done = std::move(done)] {
    ReloadOutcome r = reload();
    done(r.status ? 200 : http_status(r.status.error().code), r.json());
  });
  jobs_cv_.notify_one();
}

void Server::stop_reload_worker() {
  {
    std::lock_guard lock(jobs_mu_);
    jobs_stopping_ = true;
  }
  jobs_cv_.notify_all();
  if (reload_worker_.joinable()) reload_worker_.join();
}

namespace {
// Blocks this (non-loop) thread until `done` has been called, or `timeout`.
// The completion may run later, on any thread, after we stopped waiting.
class Completion {
 public:
  std::function<void()> callback() {
    return [p = promise_] { p->set_value(); };
  }
  bool wait(std::chrono::milliseconds timeout) {
    return future_.wait_for(timeout) == std::future_status::ready;
  }

 private:
  std::shared_ptr<std::promise<void>> promise_ = std::make_shared<std::promise<void>>();
  std::future<void> future_ = promise_->get_future();
};
}  // namespace

void Server::stop() {
  if (stopped_ || !loops_) return;
  stop_reload_worker();
  {
    std::lock_guard lock(reload_mu_);  // a reload in progress finishes first
    stopped_ = true;
  }
  stop_sweeps();
  stop_listeners();
  drain_requests();
  drain_sessions();
  if (hooks_) hooks_->stop();  // no session is left to ask
  if (moderation_) moderation_->stop();
  drain_upstream();
  // Its connections live on the loops: closed while they still run.
  if (valkey_) valkey_->shutdown();
  loops_->stop();
  if (trimmer_.joinable()) trimmer_.join();  // started only on loop 0, stopped now
  flush_stores();
  spdlog::info("stopped: {} appends were in flight", hub_->inflight());
}

void Server::stop_sweeps() {
  if (!sweep_timer_) return;
  Completion cancelled;
  loops_->run_on(0, [this, done = cancelled.callback()] {
    sweeps_stopped_ = true;
    sweep_timer_->cancel();
    done();
  });
  cancelled.wait(std::chrono::seconds(5));
  // The gateway's per-loop sweeps run on until drain_sessions: while requests
  // drain they still close peers that stopped answering.
}

void Server::stop_listeners() {
  if (api_) api_->set_draining();
  if (http_listener_) http_listener_->stop();
  if (tcp_listener_) tcp_listener_->stop();
  for (auto& l : listeners_) l->stop();
}

void Server::drain_requests() {
  // Sessions refuse new pub/join/state; the hub refuses what raced past that
  // and reports when every accepted join and publish has been answered on its
  // client's loop, so the acks are queued before the bye below.
  gateway_->begin_drain();
  if (!hub_) return;
  Completion answered;
  hub_->close(answered.callback());
  if (!answered.wait(std::chrono::milliseconds(kDrainGraceMs))) {
    spdlog::warn("drain: hub requests still unanswered after {} ms", kDrainGraceMs);
  }
}

void Server::drain_sessions() {
  Completion told;
  gateway_->drain(told.callback());
  told.wait(std::chrono::seconds(5));
  Completion closed;
  gateway_->when_sessions_closed(closed.callback());
  if (closed.wait(std::chrono::milliseconds(kDrainCloseMs))) return;
  // Peers that did not complete the close: drop them (each connection and its
  // session hold one another until it finishes).
  Completion aborted;
  gateway_->abort_remaining(aborted.callback());
  aborted.wait(std::chrono::seconds(5));
}

void Server::drain_upstream() {
  if (!forwarder_) return;
  // The closed sessions' leaves are among the queued events: give the app
  // servers a bounded moment, then abandon what is left (counted in the log).
  const auto by = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainUpstreamMs);
  while (forwarder_->queued() > 0 && std::chrono::steady_clock::now() < by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (const int64_t left = forwarder_->queued(); left > 0) {
    spdlog::warn("drain: {} upstream events not delivered", left);
  }
  forwarder_->stop();
}

void Server::flush_stores() {
  if (durable_) durable_->flush();
}

}  // namespace parley::server
