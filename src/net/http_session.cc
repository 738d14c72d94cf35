#include "net/http_session.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

namespace parley::net {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(30);
constexpr size_t kMaxHeaderBytes = 8 * 1024;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// RFC 6455 4.2.1: Sec-WebSocket-Key is the base64 of 16 bytes, so 22 base64
// characters and "==". Beast checks only that it is present and not too long.
bool valid_websocket_key(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  return std::all_of(key.begin(), key.begin() + 22, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/';
  });
}
}  // namespace

HttpSession::HttpSession(boost::asio::ip::tcp::socket socket, unsigned loop,
                         admin::ThreadMetrics& metrics, const HttpSessionOptions& opts)
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

void HttpSession::upgrade() {
  auto req = parser_->release();
  if (path_of(req.target()) != "/v1/ws") {
    keep_alive_ = false;
    write_response({404, "application/json", R"({"code":"bad_request","msg":"not found"})"});
    return;
  }
  if (auto key = req.find(http::field::sec_websocket_key);
      key != req.end() && !valid_websocket_key(key->value())) {
    keep_alive_ = false;
    write_response({400, "application/json",
                    R"({"code":"bad_request","msg":"invalid Sec-WebSocket-Key"})"});
    return;
  }
  auto origin = req[http::field::origin];
  if (opts_.origin_ok && !opts_.origin_ok(origin)) {
    keep_alive_ = false;
    write_response({403, "application/json", R"({"code":"forbidden","msg":"origin not allowed"})"});
    return;
  }
  stream_.expires_never();
  auto ws = std::make_shared<WsConnection>(stream_.release_socket(), loop_, metrics_,
                                           opts_.ws_max_message_bytes);
  ws->accept(std::move(req), opts_.on_websocket);
}

void HttpSession::write_response(HttpResponse res) {
  auto msg = std::make_shared<http::response<http::string_body>>();
  msg->version(version_);
  msg->result(static_cast<http::status>(res.status));
  msg->set(http::field::server, "parley");
  msg->set(http::field::content_type, res.content_type);
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
