// A WebSocket (RFC 6455) client connection over Boost.Beast.
// Runs on its loop (see Connection). Beast carries the framing, masking,
// UTF-8 validation of text messages, control frames and close handshake;
// this class adds the write queue and heartbeat accounting.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "net/connection.h"

namespace parley::net {

class WsConnection final : public Connection {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Ready = std::function<void(std::shared_ptr<WsConnection>)>;

  WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop, admin::ThreadMetrics& metrics,
               size_t max_message_bytes);

  // Completes the handshake of an upgrade request already read; calls `ready`
  // on success (the caller then start()s it), drops the socket on failure.
  void accept(Request req, Ready ready);

  void heartbeat() override;
  Transport transport() const override { return Transport::kWebSocket; }

 private:
  void start_reading() override;
  void write_frame(const OutFrame& frame) override;
  void close_transport(int code, const std::string& reason) override;
  void abort_transport() override;
  void read_next();

  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::flat_buffer buffer_;
  bool ping_in_flight_ = false;
};

}  // namespace parley::net
