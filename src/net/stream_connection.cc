#include "net/stream_connection.h"

#include <boost/asio/read.hpp>

namespace parley::net {

namespace {
constexpr size_t kReadChunk = 2048;
}

template <typename Socket>
StreamConnection<Socket>::StreamConnection(Socket socket, unsigned loop,
                                           metrics::ThreadMetrics& metrics, size_t max_frame_bytes,
                                           Transport transport)
    : Connection(socket.get_executor(), loop, metrics),
      socket_(std::move(socket)),
      reader_(max_frame_bytes),
      transport_(transport) {
  boost::system::error_code ec;
  if constexpr (std::is_same_v<Socket, boost::asio::ip::tcp::socket>) {
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  }
  socket_.non_blocking(true, ec);  // Connection writes with sendmsg directly
}

template <typename Socket>
void StreamConnection<Socket>::start_reading() {
  read_next();
}

template <typename Socket>
void StreamConnection<Socket>::read_next() {
  if (reader_.failed()) return drain_next();
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  auto room = reader_.prepare(kReadChunk);
  socket_.async_read_some(
      boost::asio::buffer(room.data(), room.size()),
      [self](boost::system::error_code ec, size_t n) {
        if (ec) {
          self->abort();
          return;
        }
        self->reader_.commit(n);
        self->heard_from_peer();
        for (;;) {
          auto next = self->reader_.next();
          if (next.status == protocol::LengthPrefixedReader::Status::kNeedMore) break;
          if (next.status == protocol::LengthPrefixedReader::Status::kOversized) {
            // Refused from the prefix, before the payload is buffered; the
            // stream's alignment is lost, so nothing more is framed.
            self->refuse(Refusal::kFrameTooLarge);
            break;
          }
          self->deliver(next.frame, false);
          if (self->closing()) break;
        }
        self->account_preauth();
        self->read_next();  // also while closing: EOF from the peer ends the loop
      });
}

template <typename Socket>
void StreamConnection<Socket>::drain_next() {
  thread_local char sink[kReadChunk];
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  socket_.async_read_some(boost::asio::buffer(sink, sizeof sink),
                          [self](boost::system::error_code ec, size_t) {
                            if (ec) {
                              self->abort();
                              return;
                            }
                            self->drain_next();
                          });
}

template <typename Socket>
size_t StreamConnection<Socket>::frame_header(const OutFrame& frame, uint8_t* out) const {
  protocol::encode_length_prefix(static_cast<uint32_t>(frame.bytes()), reinterpret_cast<char*>(out));
  return 4;
}

template <typename Socket>
void StreamConnection<Socket>::wait_writable() {
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  socket_.async_wait(Socket::wait_write,
                     [self](boost::system::error_code ec) { self->on_writable(!ec); });
}

template <typename Socket>
void StreamConnection<Socket>::close_transport(int, const std::string&) {
  boost::system::error_code ec;
  socket_.shutdown(Socket::shutdown_send, ec);
  // The pending read ends when the peer closes its side (or on the close deadline).
}

template <typename Socket>
void StreamConnection<Socket>::abort_transport() {
  boost::system::error_code ec;
  socket_.shutdown(Socket::shutdown_both, ec);
  socket_.close(ec);
}

template class StreamConnection<boost::asio::ip::tcp::socket>;
template class StreamConnection<boost::asio::local::stream_protocol::socket>;

}  // namespace parley::net
