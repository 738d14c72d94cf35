// parley: `serve` runs the server, `token` mints a client token.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "auth/jwt.h"
#include "common/clock.h"
#include "server/config.h"
#include "server/server.h"

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  parley serve [--config FILE]\n"
    "  parley token [--config FILE] --tenant T --user U [--ttl SECONDS] [--chans P ...]\n"
    "  parley version\n";

// The configuration at `path` (the demo one when empty); explains and returns
// nullopt when it cannot be used.
std::optional<parley::server::ServerConfig> load(const std::string& path) {
  auto cfg = path.empty() ? parley::Result<parley::server::ServerConfig>(parley::server::demo_config())
                          : parley::server::load_config_file(path);
  if (!cfg) {
    std::cerr << "parley: " << cfg.error().msg << "\n";
    return std::nullopt;
  }
  return std::move(*cfg);
}

int serve(const std::vector<std::string>& args) {
  std::string config_path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) {
      config_path = args[++i];
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  auto cfg = load(config_path);
  if (!cfg) return 2;
  spdlog::set_level(spdlog::level::from_str(cfg->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l %v");
  // Signals are taken by sigwait in the main thread only: block them before
  // any loop thread starts, so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const bool demo = config_path.empty();
  std::cout.setf(std::ios::unitbuf);
  parley::server::Server server(*cfg);
  if (auto st = server.start(); !st) {
    spdlog::error("cannot start: {}", st.error().msg);
    return 1;
  }
  spdlog::info("parley listening on {} (WebSocket /v1/ws, HTTP API){}{}; store {} in {}",
               cfg->listen, cfg->tcp_listen.empty() ? "" : ", raw TCP on " + cfg->tcp_listen,
               cfg->unix_listen.empty() ? "" : ", Unix socket " + cfg->unix_listen, cfg->store,
               cfg->data_dir);
  // A machine-readable line for supervisors and tests (ports may be 0 in config).
  std::cout << "parley ready http=" << server.http_port() << " tcp=" << server.tcp_port() << "\n";
  if (demo) {
    std::cout << "\nDemo tenant \"demo\" is ready.\n"
                 "  token:    parley token --tenant demo --user alice\n"
                 "  connect:  ws://" << cfg->listen << "/v1/ws, then send\n"
                 "            {\"op\":\"hello\",\"v\":1,\"token\":\"<token>\",\"rid\":1}\n"
                 "  publish:  curl -H 'Authorization: Bearer demo-api-key' -d "
                 "'{\"ch\":\"chat:lobby\",\"body\":{\"text\":\"hi\"}}' http://" << cfg->listen
              << "/v1/publish\n"
                 "  metrics:  http://" << cfg->listen << "/metrics\n"
              << std::endl;
  }
  return server.run_until_signal();
}

int token(const std::vector<std::string>& args) {
  std::string config_path, tenant, user;
  int64_t ttl = 3600;
  parley::auth::Claims claims;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has = i + 1 < args.size();
    if (a == "--config" && has) {
      config_path = args[++i];
    } else if (a == "--tenant" && has) {
      tenant = args[++i];
    } else if (a == "--user" && has) {
      user = args[++i];
    } else if (a == "--ttl" && has) {
      ttl = std::stoll(args[++i]);
    } else if (a == "--chans") {
      claims.has_chans = true;
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) claims.chans.push_back(args[++i]);
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  if (tenant.empty() || user.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  auto cfg = load(config_path);
  if (!cfg) return 2;
  auto it = cfg->tenants.find(tenant);
  if (it == cfg->tenants.end()) {
    std::cerr << "parley: no tenant \"" << tenant << "\" in the configuration\n";
    return 2;
  }
  claims.sub = user;
  claims.tenant = tenant;
  claims.exp = parley::wall_ms() / 1000 + ttl;
  std::cout << parley::auth::mint_hs256(claims, it->second.secret) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "serve") return serve(args);
  if (cmd == "token") return token(args);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "parley 0.1.0 (protocol v1)\n";
    return 0;
  }
  std::cerr << kUsage;
  return 2;
}
