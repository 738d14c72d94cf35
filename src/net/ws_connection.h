// A WebSocket (RFC 6455) client connection past its opening handshake
// (net/http_session.cc answers the upgrade). Runs on its loop (see Connection).
//
// Reading waits for the socket to become readable, then reads what it holds
// into the loop's scratch buffer and handles every complete frame in place
// (protocol/websocket.h says why this is not Beast's websocket::stream). An
// idle connection owns no read buffer at all: its FrameReader keeps only the
// bytes of a frame cut by a read, and a fragmented message.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "net/connection.h"
#include "net/read_wait.h"
#include "net/tls.h"
#include "protocol/websocket.h"

namespace parley::net {

class WsConnection final : public Connection, private protocol::ws::FrameReader::Sink {
 public:
  // `early` holds bytes the client sent right behind its upgrade request.
  // `max_message_bytes` is the limit before authentication (set_authenticated
  // raises it).
  // With `tls`, the socket speaks TLS (wss) through that session, handshake done.
  WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop, metrics::ThreadMetrics& metrics,
               size_t max_message_bytes, std::string origin, std::string early = {},
               std::unique_ptr<TlsSession> tls = nullptr);

  Transport transport() const override { return Transport::kWebSocket; }

 private:
  void start_reading() override;
  boost::asio::any_io_executor executor() override { return socket_.get_executor(); }
  void on_heartbeat() override;
  size_t frame_header(const OutFrame& frame, uint8_t* out) const override;
  int native_fd() override { return socket_.native_handle(); }
  void wait_writable() override;
  void close_transport(int code, const std::string& reason) override;
  void close_written() override;
  void abort_transport() override;
  ssize_t write_some(const struct iovec* iov, int count) override;
  bool flush_transport() override { return !tls_ || tls_->flush(socket_.native_handle()); }
  // One read from the socket, through TLS when there is one (recv's contract).
  ssize_t read_some(void* buf, size_t cap);
  void set_max_frame(size_t bytes) override { reader_.set_max_message(bytes); }
  size_t read_buffer_bytes() const override { return reader_.held_bytes(); }
  void discard_input() override { reader_.abandon(); }

  // What the frames read ask for (protocol::ws::FrameReader::Sink).
  void on_message(std::string_view payload, bool binary) override { deliver(payload, binary); }
  void on_ping(std::string_view payload) override;
  void on_close(int code) override;
  // Fails the connection (RFC 6455 7.1.7): close with `code`, read no
  // further. A message over the limit is the session's to answer (before
  // hello it is unauthorized/4001, after it 1009).
  void on_fail(int code, const char* why) override {
    if (code == 1009) return refuse(Refusal::kFrameTooLarge);
    close(code, why);
  }

  // `drained`: the last read emptied the socket (EAGAIN, or a short read),
  // so the edge-triggered ReadWait suffices; otherwise bytes may be left and
  // the wait must re-check the level (async_wait's re-arm).
  void wait_readable(bool drained);
  void on_readable();
  void send_control(uint8_t opcode, std::string payload);
  bool peer_closed() const { return reader_.done() && !reader_.failed(); }

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<TlsSession> tls_;  // null: plain
  protocol::ws::FrameReader reader_;
  ReadWait read_wait_;
  // Bytes read past the upgrade request, until start (null when none: most
  // clients wait for the 101).
  std::unique_ptr<std::string> early_;
  bool close_sent_ = false;  // our close frame is written
};

}  // namespace parley::net
