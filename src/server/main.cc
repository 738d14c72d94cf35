// parley: `serve` runs the server, `token` mints a client token, `check-config`
// validates a configuration file, `persist` runs the WAL persister (valkey store
// to PostgreSQL), `reload` asks a running server to re-read its configuration
// file. Arguments are parsed in server/cli.h; exit
// codes: 0 ok, 1 failed while running, 2 bad usage or configuration.
#include <malloc.h>
#include <signal.h>
#include <spdlog/details/os.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "auth/jwt.h"
#include "common/clock.h"
#include "protocol/version.h"
#include "server/cli.h"
#include "server/config.h"
#include "server/json_log.h"
#include "server/persist_command.h"
#include "server/reload_command.h"
#include "server/server.h"
#include "server/startup_pages.h"
#include "server/verify_data_command.h"

namespace {

std::string usage();

// The configuration at `path`, or the demo one when `path` is empty.
parley::Result<parley::server::ServerConfig> load(const std::string& path) {
  if (path.empty()) return parley::server::demo_config();
  return parley::server::load_config_file(path);
}

// A configuration that does not check: each line of the message names the
// file and a key (every problem found, config.h).
int config_error(const parley::Error& e) {
  std::string_view msg = e.msg;
  while (!msg.empty()) {
    const size_t nl = msg.find('\n');
    std::cerr << "parley: " << msg.substr(0, nl) << "\n";
    if (nl == std::string_view::npos) break;
    msg = msg.substr(nl + 1);
  }
  return parley::server::kExitUsage;
}

// A bad argument: what is wrong, then the usage.
int usage_error(const parley::Error& e) {
  std::cerr << "parley: " << e.msg << "\n" << usage();
  return parley::server::kExitUsage;
}

int serve(const std::vector<std::string>& argv) {
  auto args = parley::server::parse_serve_args(argv);
  if (!args) return usage_error(args.error());
  const std::string& config_path = args->config_path;
  auto cfg = load(config_path);
  if (!cfg) return config_error(cfg.error());
  if (args->accept_data_loss) cfg->accept_data_loss = true;
  spdlog::set_level(spdlog::level::from_str(cfg->log_level));
  // Log lines are rare (start, stop, faults) and must reach a supervisor's pipe
  // when they happen, not when the process exits: stdio buffers a pipe fully.
  spdlog::flush_on(spdlog::level::info);
  parley::server::apply_log_format(cfg->log_format);
  // Signals are taken by sigwait in the main thread only: block them before
  // any loop thread starts, so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);  // reload (Server::run_until_signal)
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const bool demo = config_path.empty();
  std::cout.setf(std::ios::unitbuf);
  parley::server::Server server(*cfg, config_path);
  if (auto st = server.start(); !st) {
    spdlog::error("cannot start: {}", st.error().msg);
    return parley::server::kExitFailed;
  }
  spdlog::info("parley listening on {} (WebSocket /v1/ws, HTTP API){}{}; store {} in {}",
               cfg->listen, cfg->tcp_listen.empty() ? "" : ", raw TCP on " + cfg->tcp_listen,
               cfg->unix_listen.empty() ? "" : ", Unix socket " + cfg->unix_listen, cfg->store,
               cfg->data_dir);
  // Not ready before the store answers (valkey: some master replied): /healthz
  // says 503 meanwhile, and the line below says where to ask.
  if (!server.store_answers()) {
    // One write per line: spdlog's default sink shares stdout from other threads,
    // and a line written in pieces can take a log record between them.
    std::cout << ("parley waiting for the store http=" + std::to_string(server.http_port()) +
                  " tcp=" + std::to_string(server.tcp_port()) + "\n")
              << std::flush;
    spdlog::warn("the store does not answer yet; not ready until it does");
    int held = 0;  // a SIGHUP meanwhile is put back for run_until_signal
    while (!server.store_answers()) {
      const timespec tick{0, 50'000'000};
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGHUP) {
        held = sig;
      } else if (sig > 0) {
        raise(sig);
        return server.run_until_signal();
      }
    }
    if (held) raise(held);
  }
  // A machine-readable line for supervisors and tests (ports may be 0 in config);
  // with log_format = "json" it is a log record too, its ports also as fields.
  const std::string ready = "parley ready http=" + std::to_string(server.http_port()) +
                            " tcp=" + std::to_string(server.tcp_port());
  if (cfg->log_format == "json") {
    std::cout << parley::server::json_log_line(
        std::chrono::system_clock::now(), "info", ready, spdlog::details::os::thread_id(),
        {{"http", server.http_port()}, {"tcp", server.tcp_port()}}) << std::flush;
  } else {
    std::cout << (ready + "\n") << std::flush;  // one write (see "waiting" above)
  }
  if (demo) {
    std::cout << "\nDemo tenant \"demo\" is ready.\n"
                 "  token:    parley token --tenant demo --user alice\n"
                 "  connect:  ws://" << cfg->listen << "/v1/ws, then send\n"
                 "            {\"op\":\"hello\",\"v\":" << parley::protocol::kProtocolVersion
              << ",\"token\":\"<token>\",\"rid\":1}\n"
                 "  publish:  curl -H 'Authorization: Bearer demo-api-key' -d "
                 "'{\"ch\":\"chat:lobby\",\"body\":{\"text\":\"hi\"}}' http://" << cfg->listen
              << "/v1/publish\n"
                 "  metrics:  http://" << cfg->listen << "/metrics\n"
              << std::endl;
  }
  // Start-up goes on for a moment after `ready` (RocksDB's first background jobs,
  // the topics' recovery on their loops): pages given back before it ends would be
  // mapped again (an idle server measured 4.2-9.2 MiB; 4.1-5.0 after waiting 1 s).
  // A signal arriving meanwhile is put back for run_until_signal.
  const timespec settle{1, 0};
  if (const int sig = sigtimedwait(&set, nullptr, &settle); sig > 0) {
    raise(sig);
  } else {
    const auto released = parley::server::release_startup_pages();
    spdlog::debug("start-up pages given back: {} KiB of {} file mappings", released.bytes / 1024,
                  released.mappings);
  }
  return server.run_until_signal();
}

int token(const std::vector<std::string>& argv) {
  auto args = parley::server::parse_token_args(argv);
  if (!args) return usage_error(args.error());
  auto cfg = load(args->config_path);
  if (!cfg) return config_error(cfg.error());
  auto it = cfg->tenants.find(args->tenant);
  if (it == cfg->tenants.end()) {
    std::cerr << "parley: no tenant \"" << args->tenant << "\" in the configuration\n";
    return parley::server::kExitUsage;
  }
  parley::auth::Claims claims;
  claims.sub = args->user;
  claims.tenant = args->tenant;
  claims.has_chans = args->has_chans;
  claims.chans = args->chans;
  claims.exp = parley::wall_ms() / 1000 + args->ttl_s;
  std::cout << parley::auth::mint_hs256(claims, it->second.secret) << "\n";
  return parley::server::kExitOk;
}

// Parses and checks FILE as `serve --config FILE` would, starting nothing.
int check_config(const std::vector<std::string>& argv) {
  auto args = parley::server::parse_check_config_args(argv);
  if (!args) return usage_error(args.error());
  auto cfg = parley::server::load_config_file(args->path);
  if (!cfg) return config_error(cfg.error());
  std::cout << args->path << ": ok (" << cfg->tenants.size() << " tenant"
            << (cfg->tenants.size() == 1 ? "" : "s") << ")\n";
  return parley::server::kExitOk;
}

int persist(const std::vector<std::string>& argv) {
  auto p = parley::server::parse_persist_args(argv);
  if (!p) return usage_error(p.error());
  return parley::server::run_persist(*p);
}

int reload(const std::vector<std::string>& argv) {
  auto r = parley::server::parse_reload_args(argv);
  if (!r) return usage_error(r.error());
  return parley::server::run_reload(*r);
}

int version(const std::vector<std::string>& argv) {
  if (!argv.empty()) return usage_error({parley::ErrorCode::kBadRequest, "version takes no argument"});
  std::cout << "parley " << parley::protocol::server_version() << " (protocol v"
            << parley::protocol::kProtocolVersion << ")\n";
  return parley::server::kExitOk;
}

// Every subcommand: its arguments, what it does, and its function. A new one
// is one row; `parley --help` and `parley CMD --help` read this table.
struct Command {
  std::string_view name;
  std::string_view args;
  std::string_view what;
  int (*run)(const std::vector<std::string>&);
};
constexpr Command kCommands[] = {
    {"serve", "[--config FILE] [--accept-data-loss]",
     "run the server (without --config: a demo tenant on 127.0.0.1:7700, data in ./data)", serve},
    {"token", "[--config FILE] --tenant T --user U [--ttl SECONDS] [--chans P ...]",
     "print a client token (JWT) signed with the tenant's secret", token},
    {"check-config", "FILE", "check a configuration file, reporting every error, starting nothing",
     check_config},
    {"persist", "--config FILE", "run the WAL persister (valkey store to PostgreSQL)", persist},
    {"reload", "[--config FILE] [--server HOST:PORT] [--key ADMIN_KEY]",
     "make a running server re-read its configuration file", reload},
    {"verify-data", "DIR",
     "check a stopped server's embedded store against its checksums, naming damaged files and "
     "channels",
     parley::server::run_verify_data},
    {"version", "", "print the server's and the protocol's version", version},
};

std::string usage_of(const Command& c) {
  return "  parley " + std::string(c.name) + (c.args.empty() ? "" : " ") + std::string(c.args) + "\n";
}

std::string usage() {
  std::string out = "usage:\n";
  for (const Command& c : kCommands) out += usage_of(c);
  return out + "  parley CMD --help\n";
}

bool asks_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << usage();
    return parley::server::kExitUsage;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << usage();
    return parley::server::kExitOk;
  }
  if (cmd == "--version") return version(args);
  for (const Command& c : kCommands) {
    if (cmd != c.name) continue;
    if (asks_help(args)) {
      std::cout << "usage:\n" << usage_of(c) << "\n" << c.what << "\n";
      return parley::server::kExitOk;
    }
    return c.run(args);
  }
  std::cerr << "parley: unknown command \"" << cmd << "\"\n" << usage();
  return parley::server::kExitUsage;
}

}  // namespace

// Commands return their errors as values; this catch is the last resort for a
// library that throws (std::bad_alloc, std::system_error from a thread), so
// that even then the process says why and exits with a code instead of aborting.
int main(int argc, char** argv) {
  // glibc gives each thread that allocates its own arena (up to 8 per core), and
  // every arena keeps its freed pages: few arenas hold less RSS. Two (the main
  // thread's and one for every other thread) held 4-9 MiB less than the default
  // under an event stream, but the loops, the store's writer and RocksDB's threads
  // then all took one arena lock: 0.4-0.7 futex calls per event at 60,000/s,
  // mostly that lock. Four (with the fixed mmap threshold below, which keeps
  // memtable blocks out of the arenas) halved those calls with the peak RSS at
  // 100,000 events/s unchanged (issue 12). MALLOC_ARENA_MAX still wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 4);
  // A fixed mmap threshold: glibc's own rises to the largest block ever freed,
  // after which RocksDB's 512 KiB memtable arena blocks came from the arena and
  // stayed there as holes once their memtable was flushed. Mapped, they go back
  // to the system with the memtable: 100,000 events/s peaked 7-10 MiB lower
  // (issue 12). MALLOC_MMAP_THRESHOLD_ still wins.
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parley: internal error: " << e.what() << "\n";
    return parley::server::kExitFailed;
  }
}
