#include "net/stream_connection.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace parley::net {

namespace {
constexpr size_t kReadChunk = 2048;
}

template <typename Socket>
StreamConnection<Socket>::StreamConnection(Socket socket, unsigned loop,
                                           admin::ThreadMetrics& metrics, size_t max_frame_bytes,
                                           Transport transport)
    : Connection(socket.get_executor(), loop, metrics),
      socket_(std::move(socket)),
      reader_(max_frame_bytes),
      transport_(transport) {
  if constexpr (std::is_same_v<Socket, boost::asio::ip::tcp::socket>) {
    boost::system::error_code ec;
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  }
}

template <typename Socket>
void StreamConnection<Socket>::start_reading() {
  read_next();
}

template <typename Socket>
void StreamConnection<Socket>::read_next() {
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  auto room = reader_.prepare(kReadChunk);
  socket_.async_read_some(
      boost::asio::buffer(room.data(), room.size()),
      [self](boost::system::error_code ec, size_t n) {
        if (ec) {
          self->abort_transport();
          self->finish();
          return;
        }
        self->reader_.commit(n);
        self->heard_from_peer();
        for (;;) {
          auto next = self->reader_.next();
          if (next.status == protocol::LengthPrefixedReader::Status::kNeedMore) break;
          if (next.status == protocol::LengthPrefixedReader::Status::kOversized) {
            // Stream alignment is lost: nothing more can be read from it.
            self->abort_transport();
            self->finish();
            return;
          }
          self->deliver(next.frame, false);
          if (self->closing()) break;
        }
        self->read_next();  // also while closing: EOF from the peer ends the loop
      });
}

template <typename Socket>
void StreamConnection<Socket>::write_frame(const OutFrame& frame) {
  auto self = std::static_pointer_cast<StreamConnection>(shared_from_this());
  protocol::encode_length_prefix(static_cast<uint32_t>(frame.bytes()), prefix_.data());
  gather_.clear();
  gather_.emplace_back(prefix_.data(), prefix_.size());
  if (frame.gathered()) {
    gather_.insert(gather_.end(), frame.parts().begin(), frame.parts().end());
  } else {
    gather_.emplace_back(frame.owned().data(), frame.owned().size());
  }
  // A view, not the vector: the write operation keeps a copy of the sequence.
  boost::asio::async_write(socket_, std::span<const boost::asio::const_buffer>(gather_),
                           [self](boost::system::error_code ec, size_t) {
                             self->on_write_done(!ec);
                           });
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
