#include "support/server_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "auth/jwt.h"
#include "common/clock.h"

namespace parley::testing {

std::string valkey_toml(const std::vector<std::string>& nodes, bool cluster) {
  std::string s = "[valkey]\nnodes = [";
  for (size_t i = 0; i < nodes.size(); ++i) s += (i ? ", \"" : "\"") + nodes[i] + "\"";
  s += "]\n";
  if (cluster) s += "cluster = true\n";
  return s;
}

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
      << "log_level = \"" << spec_.log_level << "\"\n";
  // The topic tests run once per topic log (tests/CMakeLists.txt registers the
  // second run with PARLEY_TEST_TOPIC_LOG=rocksdb): the same tests, another engine.
  const char* topic_log = std::getenv("PARLEY_TEST_TOPIC_LOG");
  if (topic_log != nullptr && *topic_log != '\0' && spec_.store == "embedded" &&
      spec_.server_extra.find("topic_log") == std::string::npos) {
    cfg << "topic_log = \"" << topic_log << "\"\n";
  }
  cfg << spec_.server_extra << "\n\n" << spec_.tenants_toml;
}

ServerProcess::~ServerProcess() {
  if (child_.running()) kill9();
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

void ServerProcess::start_waiting_for_store() {
  const bool waiting = launch("parley waiting for the store");
  ASSERT_TRUE(waiting) << "server did not say it waits for its store:\n" << log();
}

bool ServerProcess::launch(const char* marker) {
  std::vector<std::string> args = {ParleyChild::binary(PARLEY_BIN), "serve", "--config",
                                   config_path()};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  const std::string at = std::string(marker) + " http=";
  const std::string format = at + "%u tcp=%u";
  return child_.launch(args, dir_ + "/server.log", [this, at, format](const std::string& line) {
    unsigned h = 0, t = 0;
    // Plain, or inside a JSON log record (server.log_format = "json").
    const char* ready_at = strstr(line.c_str(), at.c_str());
    if (!ready_at || sscanf(ready_at, format.c_str(), &h, &t) != 2) return false;
    http_port_ = static_cast<uint16_t>(h);
    tcp_port_ = static_cast<uint16_t>(t);
    return true;
  }, fd_limit_);
}

void ServerProcess::kill9() { child_.kill9(); }

void ServerProcess::hangup() { child_.signal(SIGHUP); }

void ServerProcess::terminate() { child_.signal(SIGTERM); }

int ServerProcess::wait_exit(std::chrono::milliseconds timeout) { return child_.wait_exit(timeout); }

std::string ServerProcess::log() const { return read_file(dir_ + "/server.log"); }

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

CliRun run_parley(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(PARLEY_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
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

int64_t metric_value(uint16_t port, const std::string& series) {
  auto r = http_request(port, "GET", "/metrics");
  const std::string needle = "\n" + series + " ";
  auto at = r.body.find(needle);
  if (at == std::string::npos) return -1;
  return std::stoll(r.body.substr(at + needle.size()));
}

}  // namespace parley::testing
