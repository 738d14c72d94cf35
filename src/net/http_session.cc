#include "net/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "common/json_writer.h"
#include "protocol/websocket.h"

namespace parley::net {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(30);
constexpr size_t kMaxHeaderBytes = 8 * 1024;

std::string error_body(std::string_view code, std::string_view msg) {
  std::string body;
  JsonWriter(body).begin_object().field("code", code).field("msg", msg).end_object();
  return body;
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace

HttpSession::HttpSession(boost::asio::ip::tcp::socket socket, unsigned loop,
                         metrics::ThreadMetrics& metrics, const HttpSessionOptions& opts)
    : stream_(std::move(socket)), loop_(loop), metrics_(metrics), opts_(opts) {}

void HttpSession::start() { read_request(); }

void HttpSession::read_request() {
  parser_.emplace();
  parser_->header_limit(kMaxHeaderBytes);
  parser_->body_limit(opts_.max_body_bytes);
  stream_.expires_after(kRequestTimeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     if (ec == http::error::body_limit) {
                       self->keep_alive_ = false;
                       self->write_response({413, "application/json",
                                             R"({"code":"too_large","msg":"body too large"})"});
                       return;
                     }
                     if (ec) {
                       // Timeout, reset, or a malformed request: nothing useful to answer.
                       beast::error_code ignored;
                       self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both,
                                                       ignored);
                       return;
                     }
                     self->on_request();
                   });
}

void HttpSession::on_request() {
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive();
  version_ = req.version();
  if (beast::websocket::is_upgrade(req)) {
    upgrade();
    return;
  }
  if (path_of(req.target()) == "/v1/ws") return refuse_non_upgrade();
  if (!opts_.handler) {
    write_response({404, "application/json", R"({"code":"bad_request","msg":"not found"})"});
    return;
  }
  auto self = shared_from_this();
  auto exec = stream_.get_executor();
  opts_.handler->handle(req, loop_, [self, exec](HttpResponse res) {
    boost::asio::dispatch(exec, [self, res = std::move(res)]() mutable {
      self->write_response(std::move(res));
    });
  });
}

// The WebSocket path asked for without a valid upgrade: the status says what
// would have worked, as RFC 6455 4.2.1 and RFC 9110 (405 with Allow, 426 with
// Upgrade) ask, rather than a misleading 404.
void HttpSession::refuse_non_upgrade() {
  const auto& req = parser_->get();
  keep_alive_ = false;
  if (req.method() != http::verb::get) {
    HttpResponse res{405, "application/json", error_body("bad_request", "the WebSocket handshake is a GET")};
    res.headers.emplace_back("Allow", "GET");
    return write_response(std::move(res));
  }
  if (req.version() < 11) {
    return write_response(
        {400, "application/json", error_body("bad_request", "the WebSocket handshake needs HTTP/1.1")});
  }
  HttpResponse res{426, "application/json", error_body("bad_request", "WebSocket upgrade required")};
  res.headers.emplace_back("Upgrade", "websocket");
  res.headers.emplace_back("Sec-WebSocket-Version", "13");
  write_response(std::move(res));
}

void HttpSession::upgrade() {
  // beast::websocket::is_upgrade() has checked GET, HTTP/1.1, Connection and
  // Upgrade; the rest of RFC 6455 4.2.1 is checked here.
  const auto& req = parser_->get();
  keep_alive_ = false;
  auto refuse = [this](int status, const char* code, const char* msg) {
    write_response({status, "application/json", error_body(code, msg)});
  };
  if (path_of(req.target()) != "/v1/ws") return refuse(404, "bad_request", "not found");
  if (req.find(http::field::host) == req.end()) return refuse(400, "bad_request", "missing Host");
  const auto key = req[http::field::sec_websocket_key];
  if (!protocol::ws::valid_client_key(key)) {
    return refuse(400, "bad_request", "invalid Sec-WebSocket-Key");
  }
  const auto version = req[http::field::sec_websocket_version];
  if (version != "13") {
    if (version.empty()) return refuse(400, "bad_request", "missing Sec-WebSocket-Version");
    HttpResponse res{426, "application/json",
                     error_body("bad_request", "unsupported Sec-WebSocket-Version")};
    res.headers.emplace_back("Sec-WebSocket-Version", "13");
    return write_response(std::move(res));
  }
  const auto origin = req[http::field::origin];
  if (opts_.origin_ok && !opts_.origin_ok(origin)) {
    return refuse(403, "forbidden", "origin not allowed");
  }
  switch_protocols(protocol::ws::accept_key(key), std::string(origin));
}

void HttpSession::switch_protocols(std::string accept, std::string origin) {
  auto head = std::make_shared<std::string>(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: " + accept + "\r\nServer: parley\r\n\r\n");
  stream_.expires_after(kRequestTimeout);
  boost::asio::async_write(
      stream_, boost::asio::buffer(*head),
      [self = shared_from_this(), head, origin = std::move(origin)](beast::error_code ec,
                                                                    size_t) mutable {
        if (ec) {
          beast::error_code ignored;
          self->stream_.socket().close(ignored);
          return;
        }
        self->stream_.expires_never();
        const auto early = self->buffer_.cdata();
        std::string bytes(static_cast<const char*>(early.data()), early.size());
        auto ws = std::make_shared<WsConnection>(self->stream_.release_socket(), self->loop_,
                                                 self->metrics_, self->opts_.ws_max_message_bytes,
                                                 std::move(origin), std::move(bytes));
        if (self->opts_.on_websocket) self->opts_.on_websocket(std::move(ws));
      });
}

void HttpSession::write_response(HttpResponse res) {
  auto msg = std::make_shared<http::response<http::string_body>>();
  msg->version(version_);
  msg->result(static_cast<http::status>(res.status));
  msg->set(http::field::server, "parley");
  msg->set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) msg->set(name, value);
  msg->keep_alive(keep_alive_);
  msg->body() = std::move(res.body);
  msg->prepare_payload();
  stream_.expires_after(kRequestTimeout);
  http::async_write(stream_, *msg, [self = shared_from_this(), msg](beast::error_code ec, size_t) {
    if (ec || !self->keep_alive_) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
      return;
    }
    self->read_request();
  });
}

}  // namespace parley::net
