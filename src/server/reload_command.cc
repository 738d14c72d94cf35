#include "server/reload_command.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>

#include <chrono>
#include <iostream>

#include "common/host_port.h"
#include "server/config.h"

namespace parley::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// A reload that closes many sessions of a removed tenant waits for them to be
// told (5 s at most per tenant): give it room.
constexpr auto kTimeout = std::chrono::seconds(60);

int failed(const std::string& msg) {
  std::cerr << "parley: reload: " << msg << "\n";
  return kExitFailed;
}

std::string joined(simdjson::ondemand::object& o, std::string_view key) {
  std::string out;
  simdjson::ondemand::array arr;
  if (o[key].get_array().get(arr)) return "?";
  for (auto v : arr) {
    std::string_view s;
    if (v.get_string().get(s)) continue;
    out += (out.empty() ? "" : ", ") + std::string(s);
  }
  return out.empty() ? "none" : out;
}

// The server's answer as a few lines for a person; the exit code for a script.
int report(int status, const std::string& body) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object o;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(o)) {
    return failed("HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
  }
  if (status != 200) {
    std::string_view msg;
    if (o["msg"].get_string().get(msg)) msg = body;
    return failed("refused (HTTP " + std::to_string(status) + "), nothing changed: " +
                  std::string(msg));
  }
  std::cout << "reloaded: added " << joined(o, "added");
  std::cout << "; removed " << joined(o, "removed");
  uint64_t closed = 0;
  if (!o["closed_connections"].get_uint64().get(closed) && closed > 0) {
    std::cout << " (" << closed << " connections sent bye)";
  }
  std::cout << "; changed " << joined(o, "changed") << "\n";
  const std::string restart = joined(o, "restart_required");
  if (restart != "none") std::cout << "needs a restart to take effect: " << restart << "\n";
  return kExitOk;
}

}  // namespace

int run_reload(const ReloadArgs& args) {
  std::string server = args.server;
  std::string key = args.key;
  if (!args.config_path.empty() && (server.empty() || key.empty())) {
    // Only [server] is read here: the running server judges the rest of the
    // file and answers why it refuses one.
    auto cfg = load_server_section(args.config_path);
    if (!cfg) return failed(cfg.error().msg + " (the server was not asked; it runs on unchanged)");
    if (server.empty()) {
      if (cfg->listen_tls) return failed("server.listen speaks TLS: send SIGHUP to the server instead");
      server = cfg->listen;
    }
    if (key.empty()) key = cfg->admin_key;
  }
  if (key.empty()) {
    return failed("server.admin_key is not set (the admin API is off): send SIGHUP to the server instead");
  }
  auto hp = parse_host_port(server);
  if (!hp) return failed("--server " + server + ": " + hp.error().msg);
  if (hp->port == 0) return failed("the address " + server + " has port 0: give --server HOST:PORT");

  // Beast's blocking calls throw; this command's boundary turns that into a message.
  try {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(kTimeout);
    stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address(hp->ip), hp->port));
    http::request<http::empty_body> req(http::verb::post, "/admin/api/reload", 11);
    req.set(http::field::host, server);
    req.set(http::field::authorization, "Bearer " + key);
    req.set(http::field::user_agent, "parley-reload/1");
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    http::read(stream, buf, parser);
    const auto& res = parser.get();
    if (res.result_int() == 401) return failed("the server refused the admin key (HTTP 401)");
    if (res.result_int() == 404) return failed("the server has no reload endpoint (HTTP 404): is server.admin_key set there?");
    return report(static_cast<int>(res.result_int()), res.body());
  } catch (const std::exception& e) {
    return failed("cannot ask " + server + ": " + e.what());
  }
}

}  // namespace parley::server
