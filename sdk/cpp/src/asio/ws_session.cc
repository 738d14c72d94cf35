#include "ws_session.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>

#include "parley/version.h"

namespace parley::detail {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class WsSession final : public Session {
 public:
  WsSession(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o)
      : Session(h, o), resolver_(io), ws_(io) {}

  void start(const Url& url) override {
    host_ = url.host + ":" + url.port;
    path_ = url.path;
    resolver_.async_resolve(url.host, url.port, [self = me()](beast::error_code ec, tcp::resolver::results_type r) {
      self->on_resolve(ec, std::move(r));
    });
  }

  void send(std::string frame, bool binary) override {
    if (dead_) return;
    out_bytes_ += frame.size();
    out_.emplace_back(std::move(frame), binary);
    if (out_bytes_ > options_.max_send_queue_bytes) return fail(1008, "send queue over its limit");
    if (open_) write_next();
  }

  void close(int code, std::string_view reason) override {
    if (dead_) return;
    // Beast allows one write at a time and a close counts as one: with a
    // frame still going out, drop the socket instead.
    if (!open_ || writing_) return abort();
    dead_ = true;
    // The stream times the close handshake out itself (timeout option below).
    ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(code), std::string(reason)),
                    [self = me()](beast::error_code) { self->shutdown(); });
  }

 private:
  std::shared_ptr<WsSession> me() { return std::static_pointer_cast<WsSession>(shared_from_this()); }

  void shutdown() override {
    beast::error_code ec;
    resolver_.cancel();
    beast::get_lowest_layer(ws_).socket().close(ec);
  }

  void fail_with_reason() {
    const auto& r = ws_.reason();
    fail(static_cast<int>(r.code), std::string(r.reason));
  }

  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (dead_) return;
    if (ec) return fail(1006, "resolve " + host_ + ": " + ec.message());
    beast::get_lowest_layer(ws_).async_connect(results, [self = me()](beast::error_code e, const tcp::endpoint&) {
      self->on_connect(e);
    });
  }

  void on_connect(beast::error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, "connect " + host_ + ": " + ec.message());
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
    websocket::stream_base::timeout t;
    t.handshake_timeout = std::chrono::seconds(30);
    t.idle_timeout = websocket::stream_base::none();  // the client's liveness check decides
    t.keep_alive_pings = false;
    ws_.set_option(t);
    ws_.read_message_max(options_.max_frame_bytes);
    const std::string sub = options_.subprotocol;
    ws_.set_option(websocket::stream_base::decorator([sub](websocket::request_type& req) {
      req.set(beast::http::field::user_agent, std::string("parley-cpp/") + PARLEY_CLIENT_VERSION);
      if (!sub.empty()) req.set(beast::http::field::sec_websocket_protocol, sub);
    }));
    ws_.async_handshake(host_, path_, [self = me()](beast::error_code e) { self->on_handshake(e); });
  }

  void on_handshake(beast::error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, "handshake " + host_ + path_ + ": " + ec.message());
    open_ = true;
    read_next();
    if (!out_.empty()) write_next();
    report_open();
  }

  void read_next() {
    ws_.async_read(in_, [self = me()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (dead_) return;
    if (ec) {
      // A close frame from the server names the reason even when answering it
      // failed (the server, or a proxy, may drop the socket right after it).
      if (ws_.reason().code != websocket::close_code::none) return fail_with_reason();
      if (ec == websocket::error::closed) return fail(1005, "closed without a code");
      if (ec == websocket::error::message_too_big) return fail(1009, "frame over max_frame_bytes");
      return fail(1006, ec.message());
    }
    const auto data = in_.cdata();
    report_frame(std::string_view(static_cast<const char*>(data.data()), data.size()));
    in_.consume(in_.size());
    if (!dead_) read_next();
  }

  void write_next() {
    if (writing_ || out_.empty() || dead_) return;
    writing_ = true;
    ws_.text(!out_.front().second);
    ws_.async_write(net::buffer(out_.front().first), [self = me()](beast::error_code ec, std::size_t) {
      self->on_write(ec);
    });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    if (dead_) return;
    if (ec) {
      if (ws_.reason().code != websocket::close_code::none) return fail_with_reason();
      return fail(1006, "write: " + ec.message());
    }
    out_bytes_ -= out_.front().first.size();
    out_.pop_front();
    write_next();
  }

  tcp::resolver resolver_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer in_;
  std::deque<std::pair<std::string, bool>> out_;
  std::size_t out_bytes_ = 0;
  std::string host_;
  std::string path_;
  bool open_ = false;
  bool writing_ = false;
};

}  // namespace

std::shared_ptr<Session> make_ws_session(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o) {
  return std::make_shared<WsSession>(io, h, o);
}

}  // namespace parley::detail
