// One HTTP/1.1 connection on the main listener: serves the HTTP API through an
// HttpHandler, or upgrades GET /v1/ws to a WebSocket connection.
// Runs on its loop; requests on one connection are answered in order.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "metrics/metrics.h"
#include "net/preauth_budget.h"
#include "net/tls_stream.h"
#include "net/ws_connection.h"

namespace parley::net {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpRequestHeader = boost::beast::http::request_header<>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra header fields
};

// Every error answered over HTTP (the HTTP API, the admin API, a refused
// WebSocket handshake) has this one body: error_json (common/error_code.h).
HttpResponse error_response(int status, ErrorCode code, std::string_view msg);
// status http_status(e.code), retry_ms kept.
HttpResponse error_response(const Error& e);
// A path nothing serves: 404 {"code":"bad_request","msg":"not found"}.
HttpResponse not_found();

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Called on the session's loop once a request's header is in, before any
  // of its body is read: an answer to send without reading the body (wrong
  // path, missing or unknown API key), or nullopt to read the body, at most
  // `body_limit` bytes (which it may lower; above it: 413).
  virtual std::optional<HttpResponse> check_header(const HttpRequestHeader& /*req*/,
                                                   size_t& /*body_limit*/) {
    return std::nullopt;
  }
  // Called on the session's loop; `respond` must be called once, on any thread
  // (it posts back to the loop).
  virtual void handle(const HttpRequest& req, unsigned loop,
                      std::function<void(HttpResponse)> respond) = 0;
};

struct HttpSessionOptions {
  size_t max_body_bytes = 1 << 20;
  // A WebSocket connection's frame limit until its hello (Connection::set_authenticated).
  size_t ws_max_message_bytes = 8 * 1024;
  // How long a connection may take to send a complete request header, after
  // connecting and between keep-alive requests.
  std::chrono::milliseconds idle_timeout{5000};
  // Whether a WebSocket handshake's Origin is acceptable (PROTOCOL.md allowed_origins).
  std::function<bool(std::string_view origin)> origin_ok;
  // A connection's first request that reaches the handler takes one of the
  // process's max_connections slots (false: answered 503 and closed); the
  // slot is given back when the connection ends. Any thread. Unset: no limit.
  std::function<bool()> take_slot;
  std::function<void()> release_slot;
  // Receives each accepted WebSocket connection, on its loop; must start() it.
  std::function<void(std::shared_ptr<WsConnection>)> on_websocket;
  HttpHandler* handler = nullptr;
  // When set, the listener speaks TLS: https and wss (server.listen_tls).
  std::shared_ptr<TlsContext> tls;
};

// Until a request reaches the handler, the socket holds a PreauthTicket (a
// newer socket may shed it: it is then closed); from then on, a
// max_connections slot (HttpSessionOptions::take_slot). At an upgrade the
// ticket goes on with the socket to the WebSocket connection, which holds it
// until `hello`.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, unsigned loop, metrics::ThreadMetrics& metrics,
              const HttpSessionOptions& opts, PreauthTicket ticket = {});
  ~HttpSession();
  void start();

 private:
  // Reads the header only; the body is read once check_header accepts it.
  void read_request();
  void on_header();
  void on_request();
  void refuse_non_upgrade();
  // Answers a request that failed to parse (400 / 413 / 431) and closes;
  // false when there is nothing worth answering (EOF, timeout, reset).
  bool answer_read_error(boost::beast::error_code ec);
  // After a last response: reads and drops what the peer still sends for a
  // moment, so that closing with unread bytes does not reset the connection
  // before the peer has read the answer.
  void linger();
  void upgrade();
  // Answers 101 and hands the socket, with any bytes read past the request, to
  // a WsConnection.
  // `subprotocol`: the Sec-WebSocket-Protocol selected ("" for none).
  void switch_protocols(std::string accept, std::string origin, std::string_view subprotocol);
  void write_response(HttpResponse res);

  // Runs `f` on the stream requests are read from and answers written to:
  // the TCP stream, or TLS over it.
  template <typename F>
  void with_stream(F&& f) {
    if (tls_stream_) {
      f(*tls_stream_);
    } else {
      f(stream_);
    }
  }

  boost::beast::tcp_stream stream_;
  std::unique_ptr<TlsSession> tls_;       // null: plain
  std::unique_ptr<TlsStream> tls_stream_;  // over stream_ and tls_
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::empty_body>> header_parser_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  PreauthTicket ticket_;
  bool holds_slot_ = false;
  size_t lingered_ = 0;
  unsigned loop_;
  metrics::ThreadMetrics& metrics_;
  const HttpSessionOptions& opts_;
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

}  // namespace parley::net
