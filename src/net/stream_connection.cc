#include "net/stream_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>

#include <cerrno>

#include "net/thread_buffer.h"
#include "runtime/loop_tail.h"

namespace parley::net {

namespace {
constexpr size_t kReadChunk = 2048;
}

template <typename Socket>
StreamConnection<Socket>::StreamConnection(Socket socket, unsigned loop,
                                           metrics::ThreadMetrics& metrics, size_t max_frame_bytes,
                                           Transport transport, std::shared_ptr<TlsContext> tls)
    : Connection(loop, metrics),
      socket_(std::move(socket)),
      tls_(tls ? std::make_unique<TlsSession>(*tls) : nullptr),
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
  if (tls_) return wait_tls_readable();
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  auto room = reader_.prepare(kReadChunk);
  socket_.async_read_some(
      boost::asio::buffer(room.data(), room.size()),
      [self](boost::system::error_code ec, size_t n) {
        if (ec) {
          self->abort();
          return;
        }
        // What the frames cause on this loop runs at this task's end (ws_connection.cc).
        runtime::TailScope tail;
        self->reader_.commit(n);
        self->heard_from_peer();
        self->handle_frames();
        self->account_preauth();
        self->read_next();  // also while closing: EOF from the peer ends the loop
      });
}

template <typename Socket>
bool StreamConnection<Socket>::handle_frames() {
  for (;;) {
    auto next = reader_.next();
    if (next.status == protocol::LengthPrefixedReader::Status::kNeedMore) return true;
    if (next.status == protocol::LengthPrefixedReader::Status::kOversized) {
      // Refused from the prefix, before the payload is buffered; the
      // stream's alignment is lost, so nothing more is framed.
      refuse(Refusal::kFrameTooLarge);
      return false;
    }
    deliver(next.frame, false);
    if (closing()) return false;
  }
}

template <typename Socket>
void StreamConnection<Socket>::wait_tls_readable() {
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  socket_.async_wait(Socket::wait_read, [self](boost::system::error_code ec) {
    if (ec) {
      self->abort();
      return;
    }
    self->on_tls_readable();
  });
}

template <typename Socket>
void StreamConnection<Socket>::on_tls_readable() {
  // TLS may hold decrypted bytes the socket no longer signals: read until it
  // asks for more ciphertext, yielding the loop now and then.
  constexpr int kRoundsPerTurn = 16;
  runtime::TailScope tail;
  for (int round = 0; round < kRoundsPerTurn; ++round) {
    auto room = reader_.prepare(kReadChunk);
    const ssize_t n = tls_->read(socket_.native_handle(), room.data(), room.size());
    if (n == 0) return abort();  // EOF or close_notify
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        account_preauth();
        return read_next();
      }
      return abort();  // not TLS, or a TLS error: nothing useful can be sent
    }
    reader_.commit(static_cast<size_t>(n));
    heard_from_peer();
    handle_frames();
    if (finished() || reader_.failed()) break;
  }
  account_preauth();
  if (finished()) return;
  if (reader_.failed()) return read_next();
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  boost::asio::post(socket_.get_executor(), [self] {
    if (!self->finished()) self->on_tls_readable();
  });
}

template <typename Socket>
ssize_t StreamConnection<Socket>::write_some(const struct iovec* iov, int count) {
  if (!tls_) return Connection::write_some(iov, count);
  return tls_->write(socket_.native_handle(), iov, count);
}

template <typename Socket>
bool StreamConnection<Socket>::flush_transport() {
  return !tls_ || tls_->flush(socket_.native_handle());
}

template <typename Socket>
void StreamConnection<Socket>::drain_next() {
  char* const sink = thread_buffer<struct DrainTag, kReadChunk>();
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  socket_.async_read_some(boost::asio::buffer(sink, kReadChunk),
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
  if (tls_) {
    tls_->shutdown();  // close_notify, best effort
    tls_->flush(socket_.native_handle());
  }
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
