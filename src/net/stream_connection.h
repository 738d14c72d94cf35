// A raw TCP or Unix-socket client connection: 4-byte big-endian length
// framing (protocol/tcp_framing.h). Runs on its loop (see Connection).
// These transports have no close codes: a close sends what is queued (the
// error or bye frame says why) and shuts the socket down.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "net/connection.h"
#include "net/tls.h"
#include "protocol/tcp_framing.h"

namespace parley::net {

template <typename Socket>
class StreamConnection final : public Connection {
 public:
  // `max_frame_bytes` is the limit before authentication (set_authenticated
  // raises it).
  // With `tls`, the stream is TLS (the peer speaks it from its first byte).
  StreamConnection(Socket socket, unsigned loop, metrics::ThreadMetrics& metrics,
                   size_t max_frame_bytes, Transport transport,
                   std::shared_ptr<TlsContext> tls = nullptr);

  Transport transport() const override { return transport_; }

 private:
  void start_reading() override;
  boost::asio::any_io_executor executor() override { return socket_.get_executor(); }
  size_t frame_header(const OutFrame& frame, uint8_t* out) const override;
  int native_fd() override { return socket_.native_handle(); }
  void wait_writable() override;
  void close_transport(int code, const std::string& reason) override;
  void abort_transport() override;
  void set_max_frame(size_t bytes) override { reader_.set_max_frame_bytes(bytes); }
  size_t read_buffer_bytes() const override { return reader_.held_bytes(); }
  void discard_input() override { reader_.abandon(); }
  ssize_t write_some(const struct iovec* iov, int count) override;
  bool flush_transport() override;
  void read_next();
  // Hands every complete frame to the session; false when reading must stop.
  bool handle_frames();
  void wait_tls_readable();
  void on_tls_readable();
  // After a refusal: reads and drops what the peer still sends, until EOF.
  void drain_next();

  Socket socket_;
  std::unique_ptr<TlsSession> tls_;  // null: plain
  protocol::LengthPrefixedReader reader_;
  Transport transport_;
};

using TcpConnection = StreamConnection<boost::asio::ip::tcp::socket>;
using UnixConnection = StreamConnection<boost::asio::local::stream_protocol::socket>;

}  // namespace parley::net
