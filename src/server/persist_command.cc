#include "server/persist_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>

#include "persist/persister.h"
#include "persist/status_http.h"
#include "server/config.h"
#include "server/dynamo_options.h"
#include "server/json_log.h"

namespace parley::server {

namespace {
std::string default_consumer() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "persister") + "-" + std::to_string(::getpid());
}
}  // namespace

int run_persist(const PersistArgs& args) {
  auto cfg = load_config_file(args.config_path);
  if (!cfg) {
    std::cerr << "parley: " << cfg.error().msg << "\n";
    return kExitUsage;
  }
  if (cfg->postgres.url.empty() && !cfg->dynamodb.enabled) {
    std::cerr << "parley: " << args.config_path << ": persist needs [postgres] url or [dynamodb]\n";
    return kExitUsage;
  }
  spdlog::set_level(spdlog::level::from_str(cfg->log_level));
  spdlog::flush_on(spdlog::level::info);
  apply_log_format(cfg->log_format);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  persist::PersisterOptions o;
  o.nodes = cfg->valkey.nodes;
  o.cluster = cfg->valkey.cluster;
  o.partitions = cfg->valkey.partitions;
  for (const auto& [id, t] : cfg->tenants) o.tenants.push_back(id);
  o.postgres_url = cfg->postgres.url;
  if (cfg->dynamodb.enabled) {
    auto d = dynamo_options(cfg->dynamodb);
    if (!d) {
      std::cerr << "parley: " << args.config_path << ": " << d.error().msg << "\n";
      return kExitUsage;
    }
    o.dynamodb = std::move(*d);
  }
  o.postgres_timeout_ms = cfg->postgres.timeout_ms;
  o.valkey_timeout_ms = cfg->valkey.command_timeout_ms;
  o.group = cfg->persist.group;
  o.consumer = cfg->persist.consumer.empty() ? default_consumer() : cfg->persist.consumer;
  o.batch = cfg->persist.batch;
  o.threads = cfg->persist.threads;
  o.poll_ms = cfg->persist.poll_ms;
  o.claim_idle_ms = cfg->persist.claim_idle_ms;
  o.trim_interval_ms = cfg->persist.trim_interval_ms;

  persist::Persister persister(o);
  if (Status s = persister.start(); !s) {
    spdlog::error("persist: cannot start: {}", s.error().msg);
    return kExitFailed;
  }
  persist::StatusHttp http;
  Status listening = http.start(cfg->persist.listen, [&persister](const std::string& target) {
    if (target == "/metrics") {
      return persist::StatusPage{200, "text/plain; version=0.0.4", persister.render_metrics()};
    }
    if (target == "/healthz") {
      const auto& s = persister.stats();
      if (!s.dynamo_up.load()) return persist::StatusPage{503, "application/json", "{\"status\":\"unavailable\",\"reason\":\"dynamodb\"}\n"};
      if (!s.postgres_up.load()) return persist::StatusPage{503, "application/json", "{\"status\":\"unavailable\",\"reason\":\"postgres\"}\n"};
      if (!s.valkey_up.load()) return persist::StatusPage{503, "application/json", "{\"status\":\"unavailable\",\"reason\":\"valkey\"}\n"};
      return persist::StatusPage{200, "application/json", "{\"status\":\"ok\"}\n"};
    }
    return persist::StatusPage{404, "text/plain", "not found\n"};
  });
  if (!listening) {
    spdlog::error("persist: {}", listening.error().msg);
    persister.stop();
    return kExitFailed;
  }
  spdlog::info("parley persist: consumer {} of group {} on {} WAL streams, /metrics on port {}", o.consumer,
               o.group, persister.streams(), http.port());
  std::cout << "parley persist ready http=" << http.port() << " streams=" << persister.streams() << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("parley persist: stopping ({})", sig == SIGINT ? "SIGINT" : "SIGTERM");
  http.stop();
  persister.stop();
  return kExitOk;
}

}  // namespace parley::server
