// A WebSocket (RFC 6455) client connection past its opening handshake
// (net/http_session.cc answers the upgrade). Runs on its loop (see Connection).
//
// Reading waits for the socket to become readable, then reads what it holds
// into the loop's scratch buffer and handles every complete frame in place
// (protocol/websocket.h says why this is not Beast's websocket::stream). An
// idle connection owns no read buffer at all: only the bytes of a frame cut by
// a read are kept, in `partial_`, and a fragmented message in `message_`.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "net/connection.h"
#include "protocol/websocket.h"

namespace parley::net {

class WsConnection final : public Connection {
 public:
  // `early` holds bytes the client sent right behind its upgrade request.
  WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop, admin::ThreadMetrics& metrics,
               size_t max_message_bytes, std::string origin, std::string early = {});

  void heartbeat() override;
  Transport transport() const override { return Transport::kWebSocket; }

 private:
  void start_reading() override;
  size_t frame_header(const OutFrame& frame, uint8_t* out) const override;
  int native_fd() override { return socket_.native_handle(); }
  void wait_writable() override;
  void close_transport(int code, const std::string& reason) override;
  void close_written() override;
  void abort_transport() override;

  void wait_readable();
  void on_readable();
  // Handles the complete frames of data[0..len) (unmasking in place); returns
  // how many bytes it consumed. Stops early once the connection is failing.
  size_t consume(uint8_t* data, size_t len);
  void on_frame(const protocol::ws::FrameHeader& h, std::string_view payload);
  void on_close_frame(std::string_view payload);
  // Fails the connection (RFC 6455 7.1.7): close with `code`, read no further.
  void fail(int code, const char* why);
  void send_control(uint8_t opcode, std::string payload);

  boost::asio::ip::tcp::socket socket_;
  size_t max_message_;
  std::string partial_;  // the start of a frame a read cut off
  std::string message_;  // a fragmented message being assembled
  protocol::ws::Utf8Checker utf8_;
  uint8_t message_opcode_ = 0;
  bool in_message_ = false;
  bool failed_ = false;       // a protocol error: input is discarded until EOF
  bool peer_closed_ = false;  // the peer's close frame arrived
  bool close_sent_ = false;   // our close frame is written
};

}  // namespace parley::net
