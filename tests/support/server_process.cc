#include "support/server_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "auth/jwt.h"
#include "common/clock.h"

namespace parley::testing {

std::string default_tenants_toml(const std::string& demo_extra) {
  return std::string("[tenants.demo]\nsecret = \"") + kDemoSecret + "\"\napi_key = \"" +
         kDemoApiKey + "\"\n" + demo_extra +
         "\n[tenants.demo.namespaces.world]\ndurable = false\ntick_ms = 20\npresence = true\n"
         "\n[tenants.other]\nsecret = \"" + kOtherSecret + "\"\napi_key = \"" + kOtherApiKey +
         "\"\n";
}

ServerProcess::ServerProcess(ServerSpec spec) {
  char tmpl[] = "/tmp/parley-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  write_config(std::move(spec));
}

void ServerProcess::write_config(ServerSpec spec) {
  spec_ = std::move(spec);
  // Written beside and renamed over: a reload never reads half a file.
  const std::string tmp = config_path() + ".tmp";
  {
    std::ofstream cfg(tmp);
    write_config_text(cfg);
  }
  std::filesystem::rename(tmp, config_path());
}

void ServerProcess::write_config_text(std::ostream& cfg) const {
  cfg << "[server]\nlisten = \"127.0.0.1:0\"\n";
  if (spec_.tcp) cfg << "tcp_listen = \"127.0.0.1:0\"\n";
  if (spec_.unix_socket) cfg << "unix_listen = \"" << unix_path() << "\"\n";
  cfg << "store = \"" << spec_.store << "\"\ndata_dir = \"" << dir_ << "/data\"\n"
      << "log_level = \"warn\"\n" << spec_.server_extra << "\n\n" << spec_.tenants_toml;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) kill9();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void ServerProcess::start() {
  const bool ready = launch();
  ASSERT_TRUE(ready) << "server did not start:\n" << log();
}

int ServerProcess::start_expecting_exit(std::chrono::milliseconds timeout) {
  if (launch()) {
    ADD_FAILURE() << "the server started, but it was expected to refuse";
    kill9();
    return -1;
  }
  return wait_exit(timeout);
}

bool ServerProcess::launch() {
  int out[2];
  if (pipe(out) != 0) return false;
  const std::string log_path = dir_ + "/server.log";
  pid_ = fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out[1], 1);
    dup2(log, 2);
    close(out[0]);
    const std::string cfg = dir_ + "/parley.toml";
    // PARLEY_TEST_BIN runs the suite against another build (e.g. a sanitizer one).
    const char* env_bin = std::getenv("PARLEY_TEST_BIN");
    const char* bin = env_bin && *env_bin ? env_bin : PARLEY_BIN;
    if (fd_limit_ > 0) {
      struct rlimit rl {fd_limit_, fd_limit_};
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    std::vector<const char*> argv = {bin, "serve", "--config", cfg.c_str()};
    for (const auto& a : extra_args_) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    execv(bin, const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  close(out[1]);
  // Read stdout until the ready line (bounded), then keep draining it in the
  // background into the log so the server never blocks on a full pipe.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char c;
  bool ready = false;
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = read(out[0], &c, 1);
    if (n <= 0) break;
    if (c != '\n') {
      line += c;
      continue;
    }
    unsigned h = 0, t = 0;
    // Plain, or inside a JSON log record (server.log_format = "json").
    const char* ready_at = strstr(line.c_str(), "parley ready http=");
    if (ready_at && sscanf(ready_at, "parley ready http=%u tcp=%u", &h, &t) == 2) {
      http_port_ = static_cast<uint16_t>(h);
      tcp_port_ = static_cast<uint16_t>(t);
      ready = true;
      break;
    }
    // What the server logged before it was ready (or instead of being ready).
    std::ofstream(log_path, std::ios::app) << line << '\n';
    line.clear();
  }
  const int fd = out[0];
  std::thread([fd, log_path] {
    std::ofstream log(log_path, std::ios::app);
    char buf[4096];
    ssize_t n;
    // Flushed at once: a test reads the log while the server runs.
    while ((n = read(fd, buf, sizeof buf)) > 0) log.write(buf, n).flush();
    close(fd);
  }).detach();
  return ready;
}

void ServerProcess::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st;
  waitpid(pid_, &st, 0);
  pid_ = -1;
}

void ServerProcess::hangup() {
  if (pid_ > 0) ::kill(pid_, SIGHUP);
}

void ServerProcess::terminate() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
}

int ServerProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int st;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string ServerProcess::log() const {
  std::ifstream f(dir_ + "/server.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string ServerProcess::token(const std::string& user, const std::string& tenant,
                                 std::vector<std::string> chans, bool has_chans, int64_t ttl_s) {
  auth::Claims c;
  c.sub = user;
  c.tenant = tenant;
  c.exp = wall_ms() / 1000 + ttl_s;
  c.chans = std::move(chans);
  c.has_chans = has_chans || !c.chans.empty();
  return auth::mint_hs256(c, tenant == "other" ? kOtherSecret : kDemoSecret);
}

HttpResult http_request(uint16_t port, const std::string& method, const std::string& target,
                        const std::string& body, const std::string& api_key) {
  namespace http = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket sock(io);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  http::write(sock, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(sock, buf, res);
  return {static_cast<int>(res.result_int()), res.body()};
}

std::vector<std::string> http_history_all(uint16_t port, const std::string& ch,
                                          const std::string& api_key) {
  std::vector<std::string> all;
  for (int page = 0; page < 10000; ++page) {
    const int64_t after = all.empty() ? 0 : json_int(all.back(), "seq").value_or(0);
    auto r = http_request(port, "GET",
                          "/v1/history?ch=" + ch + "&after=" + std::to_string(after) + "&limit=1000",
                          "", api_key);
    EXPECT_EQ(r.status, 200) << r.body;
    auto items = json_array_items(json_raw(r.body, "msgs").value_or(""));
    if (r.status != 200 || items.empty()) break;
    all.insert(all.end(), items.begin(), items.end());
  }
  return all;
}

}  // namespace parley::testing
