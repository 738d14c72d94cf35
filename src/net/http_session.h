// One HTTP/1.1 connection on the main listener: serves the HTTP API through an
// HttpHandler, or upgrades GET /v1/ws to a WebSocket connection.
// Runs on its loop; requests on one connection are answered in order.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics.h"
#include "net/ws_connection.h"

namespace parley::net {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra header fields
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Called on the session's loop; `respond` must be called once, on any thread
  // (it posts back to the loop).
  virtual void handle(const HttpRequest& req, unsigned loop,
                      std::function<void(HttpResponse)> respond) = 0;
};

struct HttpSessionOptions {
  size_t max_body_bytes = 1 << 20;
  size_t ws_max_message_bytes = 256 * 1024;  // frames above close with 1009
  // Whether a WebSocket handshake's Origin is acceptable (PROTOCOL.md allowed_origins).
  std::function<bool(std::string_view origin)> origin_ok;
  // Receives each accepted WebSocket connection, on its loop; must start() it.
  std::function<void(std::shared_ptr<WsConnection>)> on_websocket;
  HttpHandler* handler = nullptr;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, unsigned loop, metrics::ThreadMetrics& metrics,
              const HttpSessionOptions& opts);
  void start();

 private:
  void read_request();
  void on_request();
  void refuse_non_upgrade();
  void upgrade();
  // Answers 101 and hands the socket, with any bytes read past the request, to
  // a WsConnection.
  void switch_protocols(std::string accept, std::string origin);
  void write_response(HttpResponse res);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  unsigned loop_;
  metrics::ThreadMetrics& metrics_;
  const HttpSessionOptions& opts_;
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

}  // namespace parley::net
