#include "net/ws_connection.h"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>

#include "net/thread_buffer.h"
#include "runtime/loop_tail.h"

namespace parley::net {

namespace ws = protocol::ws;

namespace {
// One per loop thread: every connection of the loop reads into it in turn.
constexpr size_t kScratchBytes = 64 * 1024;
// Reads per readiness before other connections get their turn.
constexpr int kReadsPerWake = 4;

struct ScratchTag;
uint8_t* scratch() { return thread_buffer<ScratchTag, kScratchBytes, uint8_t>(); }
}  // namespace

WsConnection::WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop,
                           metrics::ThreadMetrics& metrics, size_t max_message_bytes,
                           std::string origin, std::string early,
                           std::unique_ptr<TlsSession> tls)
    : Connection(loop, metrics),
      socket_(std::move(socket)),
      tls_(std::move(tls)),
      reader_(max_message_bytes),
      early_(early.empty() ? nullptr : std::make_unique<std::string>(std::move(early))) {
  origin_ = std::move(origin);
  boost::system::error_code ec;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
}

void WsConnection::start_reading() {
  if (early_) {
    const auto early = std::move(early_);
    reader_.feed(reinterpret_cast<uint8_t*>(early->data()), early->size(), *this);
    account_preauth();
  }
  if (finished()) return;
  // TLS may already hold the client's next records (read with the upgrade):
  // read before waiting for the socket.
  if (tls_) return on_readable();
  wait_readable(false);  // the client may have sent more behind its upgrade
}

ssize_t WsConnection::read_some(void* buf, size_t cap) {
  if (tls_) return tls_->read(socket_.native_handle(), buf, cap);
  return ::recv(socket_.native_handle(), buf, cap, 0);
}

ssize_t WsConnection::write_some(const struct iovec* iov, int count) {
  if (tls_) return tls_->write(socket_.native_handle(), iov, count);
  return Connection::write_some(iov, count);
}

void WsConnection::wait_readable(bool drained) {
  if (drained && !tls_) {
    read_wait_.arm(socket_, shared_from_this(), [](void* arg, bool ok) {
      auto* self = static_cast<WsConnection*>(arg);
      if (!ok) return self->abort();
      self->on_readable();
    }, this);
    return;
  }
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  socket_.async_wait(boost::asio::ip::tcp::socket::wait_read,
                     [self](boost::system::error_code ec) {
                       if (ec) {
                         self->abort();
                         return;
                       }
                       self->on_readable();
                     });
}

void WsConnection::on_readable() {
  // What these frames cause on this loop (the shard's work, the acks, the
  // fan-out drain) runs at the end of this task, not as tasks of its own.
  runtime::TailScope tail;
  uint8_t* buf = scratch();
  bool drained = false;
  for (int round = 0; round < kReadsPerWake; ++round) {
    const ssize_t n = read_some(buf, kScratchBytes);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      // EOF or reset: the peer is gone (after its close frame, or not).
      abort();
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      drained = true;  // EAGAIN
      break;
    }
    heard_from_peer();
    const auto got = static_cast<size_t>(n);
    reader_.feed(buf, got, *this);  // after a close or a failure: discarded until EOF
    if (finished()) return;
    account_preauth();
    // Plain: a short read emptied the socket. TLS may hold more decrypted
    // bytes than the socket shows: read until it asks for more ciphertext.
    if (got < kScratchBytes && !tls_) {
      drained = true;
      break;
    }
    if (tls_ && round + 1 == kReadsPerWake) {
      auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
      boost::asio::post(socket_.get_executor(), [self] {
        if (!self->finished()) self->on_readable();
      });
      return;
    }
  }
  wait_readable(drained);
}

void WsConnection::on_ping(std::string_view payload) {
  send_control(ws::kPong, std::string(payload));
}

void WsConnection::on_close(int code) {
  if (close_started()) {
    // Our close frame is queued or out: the handshake completes once it is written.
    if (close_sent_) abort();
    return;
  }
  close(code, "");  // echo the code (1005: an empty close frame) after what is queued
}

void WsConnection::send_control(uint8_t opcode, std::string payload) {
  if (close_started()) return;  // nothing may follow our close frame
  OutFrame f(std::move(payload));
  f.opcode = opcode;
  if (opcode == ws::kPong) {
    // The peer decides how many pongs it asks for: they count against the
    // queue cap, or a peer that pings without reading would grow the queue
    // without bound. Over the cap the pong is skipped, as RFC 6455 5.5.3
    // allows (an endpoint may answer only the latest ping).
    send(std::move(f));
    return;
  }
  send_unbounded(std::move(f));  // our own ping (one per heartbeat) and close frame
}

size_t WsConnection::frame_header(const OutFrame& frame, uint8_t* out) const {
  return ws::encode_server_header(frame.opcode, frame.bytes(), out);
}

void WsConnection::wait_writable() {
  auto self = std::static_pointer_cast<WsConnection>(shared_from_this());
  socket_.async_wait(boost::asio::ip::tcp::socket::wait_write,
                     [self](boost::system::error_code ec) { self->on_writable(!ec); });
}

void WsConnection::on_heartbeat() { send_control(ws::kPing, {}); }

void WsConnection::close_transport(int code, const std::string& reason) {
  OutFrame f(code == 1005 ? std::string() : ws::close_payload(code, reason));
  f.opcode = ws::kClose;
  send_unbounded(std::move(f));
}

void WsConnection::close_written() {
  close_sent_ = true;
  if (tls_) {
    tls_->shutdown();  // close_notify behind our close frame, best effort
    tls_->flush(socket_.native_handle());
  }
  if (peer_closed()) {
    // Both close frames are out: the server closes TCP first (RFC 6455 7.1.1).
    abort();
    return;
  }
  if (reader_.failed()) {
    // A failed peer may never answer: let it see EOF behind our close frame.
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
  }
  // Otherwise wait for the peer's close frame (or the close deadline).
}

void WsConnection::abort_transport() {
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

}  // namespace parley::net
