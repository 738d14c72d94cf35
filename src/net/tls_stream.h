// A TLS AsyncStream over a beast::tcp_stream and a TlsSession, so that Beast's
// HTTP reader and writer serve https (and the wss upgrade request) unchanged,
// with tcp_stream's timeouts. After an upgrade the TlsSession moves on to the
// WebSocket connection with the socket (net/http_session.cc).
//
// One read and one write at most in flight (HttpSession's use); on its loop.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <array>
#include <string>

#include "net/tls.h"

namespace parley::net {

class TlsStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;

  TlsStream(boost::beast::tcp_stream& next, TlsSession& tls) : next_(next), tls_(tls) {}
  executor_type get_executor() { return next_.get_executor(); }

  template <typename MutableBuffers, typename Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code, size_t)>(
        ReadOp<MutableBuffers>{*this, buffers}, handler, next_);
  }

  template <typename ConstBuffers, typename Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return boost::asio::async_compose<Handler, void(boost::system::error_code, size_t)>(
        WriteOp<ConstBuffers>{*this, buffers}, handler, next_);
  }

 private:
  template <typename MutableBuffers>
  struct ReadOp {
    TlsStream& s;
    MutableBuffers buffers;
    enum { kStart, kFlushed, kRead } state = kStart;

    template <typename Self>
    void operator()(Self& self, boost::system::error_code ec = {}, size_t n = 0) {
      if (ec) return self.complete(ec, 0);
      if (state == kRead) s.tls_.feed(s.cipher_.data(), n);
      const auto buf = boost::asio::buffer_sequence_begin(buffers);
      const auto got = s.tls_.decrypt(buf->data(), buf->size());
      if (got > 0) return self.complete({}, static_cast<size_t>(got));
      if (got == -1) return self.complete(boost::asio::error::eof, 0);
      if (got < 0) return self.complete(boost::asio::error::connection_aborted, 0);
      if (s.tls_.has_output()) {  // the handshake's answer goes first
        state = kFlushed;
        s.read_out_ = s.tls_.take_output();
        return boost::asio::async_write(s.next_, boost::asio::buffer(s.read_out_), std::move(self));
      }
      state = kRead;
      s.next_.async_read_some(boost::asio::buffer(s.cipher_), std::move(self));
    }
  };

  template <typename ConstBuffers>
  struct WriteOp {
    TlsStream& s;
    ConstBuffers buffers;
    size_t taken = 0;
    bool sent = false;

    template <typename Self>
    void operator()(Self& self, boost::system::error_code ec = {}, size_t = 0) {
      if (ec) return self.complete(ec, 0);
      if (sent) return self.complete({}, taken);
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers); ++it) {
        const boost::asio::const_buffer b(*it);
        const size_t n = s.tls_.encrypt(b.data(), b.size());
        taken += n;
        if (n < b.size()) break;
      }
      if (taken == 0 && boost::asio::buffer_size(buffers) > 0) {
        return self.complete(boost::asio::error::not_connected, 0);
      }
      sent = true;
      s.write_out_ = s.tls_.take_output();
      boost::asio::async_write(s.next_, boost::asio::buffer(s.write_out_), std::move(self));
    }
  };

  boost::beast::tcp_stream& next_;
  TlsSession& tls_;
  std::array<char, 17 * 1024> cipher_{};
  std::string read_out_;
  std::string write_out_;
};

}  // namespace parley::net
