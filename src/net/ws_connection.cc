#include "net/ws_connection.h"

#include <simdjson.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

namespace parley::net {

namespace ws = protocol::ws;

namespace {
// One per loop thread: every connection of the loop reads into it in turn.
constexpr size_t kScratchBytes = 64 * 1024;
// Reads per readiness before other connections get their turn.
constexpr int kReadsPerWake = 4;
// A fragmented message's buffer above this is released once delivered.
constexpr size_t kKeepMessageBytes = 16 * 1024;

uint8_t* scratch() {
  thread_local std::array<uint8_t, kScratchBytes> buf;
  return buf.data();
}

void release_if_large(std::string& s, size_t keep) {
  if (s.empty() && s.capacity() > keep) std::string().swap(s);
}
}  // namespace

WsConnection::WsConnection(boost::asio::ip::tcp::socket socket, unsigned loop,
                           admin::ThreadMetrics& metrics, size_t max_message_bytes,
                           std::string origin, std::string early)
    : Connection(socket.get_executor(), loop, metrics),
      socket_(std::move(socket)),
      max_message_(max_message_bytes),
      partial_(std::move(early)) {
  origin_ = std::move(origin);
  boost::system::error_code ec;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
}

void WsConnection::start_reading() {
  if (!partial_.empty()) {
    const size_t used = consume(reinterpret_cast<uint8_t*>(partial_.data()), partial_.size());
    partial_.erase(0, used);
  }
  if (!finished()) wait_readable();
}

void WsConnection::wait_readable() {
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
  uint8_t* buf = scratch();
  for (int round = 0; round < kReadsPerWake; ++round) {
    const ssize_t n = ::recv(socket_.native_handle(), buf, kScratchBytes, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      // EOF or reset: the peer is gone (after its close frame, or not).
      abort();
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    heard_from_peer();
    const auto got = static_cast<size_t>(n);
    if (failed_ || peer_closed_) continue;  // discarded until EOF
    if (partial_.empty()) {
      const size_t used = consume(buf, got);
      if (!failed_ && !peer_closed_ && used < got) {
        partial_.assign(reinterpret_cast<char*>(buf) + used, got - used);
      }
    } else {
      partial_.append(reinterpret_cast<char*>(buf), got);
      const size_t used = consume(reinterpret_cast<uint8_t*>(partial_.data()), partial_.size());
      partial_.erase(0, used);
      release_if_large(partial_, 0);
    }
    if (finished()) return;
    if (got < kScratchBytes) break;
  }
  wait_readable();
}

size_t WsConnection::consume(uint8_t* data, size_t len) {
  size_t pos = 0;
  while (pos < len && !failed_ && !peer_closed_ && !finished()) {
    ws::FrameHeader h;
    const auto status = ws::parse_header(data + pos, len - pos, h);
    if (status == ws::HeaderStatus::kNeedMore) break;
    if (status == ws::HeaderStatus::kInvalid) {
      fail(1002, "invalid frame length");
      break;
    }
    if (int code = ws::check_client_header(h, max_message_)) {
      fail(code, code == 1009 ? "message too big" : "protocol error");
      break;
    }
    if (h.opcode == ws::kCont && in_message_ && message_.size() + h.payload_len > max_message_) {
      fail(1009, "message too big");
      break;
    }
    if (len - pos - h.header_len < h.payload_len) break;  // the payload is still coming
    uint8_t* payload = data + pos + h.header_len;
    ws::unmask(payload, h.payload_len, h.mask);
    pos += h.header_len + h.payload_len;
    on_frame(h, std::string_view(reinterpret_cast<char*>(payload), h.payload_len));
  }
  return pos;
}

void WsConnection::on_frame(const ws::FrameHeader& h, std::string_view payload) {
  switch (h.opcode) {
    case ws::kText:
    case ws::kBinary: {
      if (in_message_) return fail(1002, "new message inside a fragmented one");
      const bool text = h.opcode == ws::kText;
      if (h.fin) {
        if (text && !simdjson::validate_utf8(payload.data(), payload.size())) {
          return fail(1007, "invalid UTF-8");
        }
        deliver(payload, !text);
        return;
      }
      in_message_ = true;
      message_opcode_ = h.opcode;
      message_.assign(payload);
      utf8_.reset();
      if (text && !utf8_.feed(payload)) fail(1007, "invalid UTF-8");
      return;
    }
    case ws::kCont: {
      if (!in_message_) return fail(1002, "continuation without a message");
      const bool text = message_opcode_ == ws::kText;
      message_.append(payload);
      if (text && !utf8_.feed(payload)) return fail(1007, "invalid UTF-8");
      if (!h.fin) return;
      if (text && !utf8_.complete()) return fail(1007, "invalid UTF-8");
      in_message_ = false;
      deliver(message_, !text);
      message_.clear();
      release_if_large(message_, kKeepMessageBytes);
      return;
    }
    case ws::kPing:
      send_control(ws::kPong, std::string(payload));
      return;
    case ws::kPong:
      return;  // heard_from_peer() was called for the read
    case ws::kClose:
      on_close_frame(payload);
      return;
    default:
      return fail(1002, "reserved opcode");  // check_client_header refused these already
  }
}

void WsConnection::on_close_frame(std::string_view payload) {
  int code = 0;
  if (int err = ws::check_close_payload(payload, code)) return fail(err, "invalid close frame");
  peer_closed_ = true;
  if (close_started()) {
    // Our close frame is queued or out: the handshake completes once it is written.
    if (close_sent_) {
      abort();
    }
    return;
  }
  close(code, "");  // echo the code (1005: an empty close frame) after what is queued
}

void WsConnection::fail(int code, const char* why) {
  failed_ = true;
  close(code, why);
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

void WsConnection::heartbeat() {
  if (closing()) return;
  ++unanswered_pings_;
  send_control(ws::kPing, {});
}

void WsConnection::close_transport(int code, const std::string& reason) {
  OutFrame f(code == 1005 ? std::string() : ws::close_payload(code, reason));
  f.opcode = ws::kClose;
  send_unbounded(std::move(f));
}

void WsConnection::close_written() {
  close_sent_ = true;
  if (peer_closed_) {
    // Both close frames are out: the server closes TCP first (RFC 6455 7.1.1).
    abort();
    return;
  }
  if (failed_) {
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
