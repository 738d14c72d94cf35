#include "net/ws_connection.h"

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

namespace parley::net {

namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {
// The read buffer keeps its capacity between messages; past this it is
// released so one large message does not pin memory for the connection's life.
constexpr size_t kKeepBufferBytes = 16 * 1024;
}  // namespace

WsConnection::WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop,
                           admin::ThreadMetrics& metrics, size_t max_message_bytes)
    : Connection(socket.get_executor(), loop, metrics), ws_(std::move(socket)) {
  ws_.read_message_max(max_message_bytes);
  ws_.auto_fragment(false);
  websocket::stream_base::timeout t{};
  t.handshake_timeout = std::chrono::seconds(10);
  t.idle_timeout = websocket::stream_base::none();  // heartbeats are ours (loop sweep)
  t.keep_alive_pings = false;
  ws_.set_option(t);
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(beast::http::field::server, "parley"); }));
  boost::system::error_code ec;
  ws_.next_layer().set_option(boost::asio::ip::tcp::no_delay(true), ec);
}

void WsConnection::accept(Request req, Ready ready) {
  if (auto it = req.find(beast::http::field::origin); it != req.end()) {
    origin_ = std::string(it->value());
  }
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  ws_.async_accept(req, [self, ready = std::move(ready)](beast::error_code ec) {
    if (ec) {
      self->abort_transport();
      return;
    }
    ready(self);
  });
}

void WsConnection::start_reading() {
  auto weak = std::weak_ptr<Connection>(shared_from_this());
  ws_.control_callback([weak](websocket::frame_type kind, beast::string_view) {
    if (kind != websocket::frame_type::pong) return;
    if (auto self = weak.lock()) static_cast<WsConnection*>(self.get())->heard_from_peer();
  });
  read_next();
}

void WsConnection::read_next() {
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  ws_.async_read(buffer_, [self](beast::error_code ec, size_t) {
    if (ec) {
      // Beast has already answered protocol violations with their close code
      // (1002, 1007, 1009...); a closed or reset peer just ends here.
      self->abort_transport();
      self->finish();
      return;
    }
    self->heard_from_peer();
    const auto data = self->buffer_.cdata();
    self->deliver(std::string_view(static_cast<const char*>(data.data()), data.size()),
                  !self->ws_.got_text());
    self->buffer_.consume(self->buffer_.size());
    if (self->buffer_.capacity() > kKeepBufferBytes) self->buffer_.shrink_to_fit();
    self->read_next();  // also while closing: the peer's close frame ends the loop
  });
}

void WsConnection::write_frame(const OutFrame& frame) {
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  ws_.text(true);
  auto done = [self](beast::error_code ec, size_t) { self->on_write_done(!ec); };
  if (frame.gathered()) {
    ws_.async_write(frame.parts(), std::move(done));
  } else {
    ws_.async_write(boost::asio::buffer(frame.owned()), std::move(done));
  }
}

void WsConnection::heartbeat() {
  if (closing() || ping_in_flight_) return;
  ++unanswered_pings_;
  ping_in_flight_ = true;
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  ws_.async_ping({}, [self](beast::error_code) { self->ping_in_flight_ = false; });
}

void WsConnection::close_transport(int code, const std::string& reason) {
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  websocket::close_reason cr(static_cast<websocket::close_code>(code), reason);
  ws_.async_close(cr, [self](beast::error_code ec) {
    // The read loop sees the peer's close frame and calls finish(); if the
    // close itself failed, nothing more will come.
    if (ec) {
      self->abort_transport();
      self->finish();
    }
  });
}

void WsConnection::abort_transport() {
  boost::system::error_code ec;
  auto& sock = ws_.next_layer();
  sock.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  sock.close(ec);
}

}  // namespace parley::net
