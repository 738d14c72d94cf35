#include "tcp_session.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <vector>

namespace parley::detail {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

constexpr std::size_t kReadChunk = 64 * 1024;

class TcpSession final : public Session {
 public:
  TcpSession(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o)
      : Session(h, o), resolver_(io), socket_(io) {}

  void start(const Url& url) override {
    where_ = url.host + ":" + url.port;
    resolver_.async_resolve(url.host, url.port, [self = me()](error_code ec, tcp::resolver::results_type r) {
      self->on_resolve(ec, std::move(r));
    });
  }

  void send(std::string frame, bool /*binary*/) override {
    if (dead_) return;
    const auto n = static_cast<uint32_t>(frame.size());
    const char prefix[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                            static_cast<char>(n)};
    queued_.append(prefix, 4);
    queued_.append(frame);
    if (queued_.size() + writing_bytes_ > options_.max_send_queue_bytes) {
      return fail(1008, "send queue over its limit");
    }
    if (open_) write_next();
  }

  // Raw TCP has no close handshake: what is queued is flushed, then the
  // write side is shut down.
  void close(int, std::string_view) override {
    if (dead_) return;
    dead_ = true;
    if (!open_ || (queued_.empty() && writing_bytes_ == 0)) return shutdown();
    closing_ = true;
    write_next();
  }

 private:
  std::shared_ptr<TcpSession> me() { return std::static_pointer_cast<TcpSession>(shared_from_this()); }

  void shutdown() override {
    error_code ec;
    resolver_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  void on_resolve(error_code ec, tcp::resolver::results_type results) {
    if (dead_) return;
    if (ec) return fail(1006, "resolve " + where_ + ": " + ec.message());
    net::async_connect(socket_, results, [self = me()](error_code e, const tcp::endpoint&) { self->on_connect(e); });
  }

  void on_connect(error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, "connect " + where_ + ": " + ec.message());
    socket_.set_option(tcp::no_delay(true), ec);
    open_ = true;
    read_next();
    write_next();
    report_open();
  }

  void read_next() {
    if (in_.size() - in_end_ < kReadChunk) {
      // Move what is left of a partial frame to the front, then grow if needed.
      in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_begin_));
      in_end_ -= in_begin_;
      in_begin_ = 0;
      if (in_.size() - in_end_ < kReadChunk) in_.resize(in_end_ + kReadChunk);
    }
    socket_.async_read_some(net::buffer(in_.data() + in_end_, in_.size() - in_end_),
                            [self = me()](error_code ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(error_code ec, std::size_t n) {
    if (dead_) return;
    if (ec) return fail(1006, ec == net::error::eof ? "closed by the server" : ec.message());
    in_end_ += n;
    while (in_end_ - in_begin_ >= 4) {
      const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + in_begin_);
      const std::size_t len = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) | (std::size_t{p[2]} << 8) | p[3];
      if (len > options_.max_frame_bytes) return fail(1009, "frame over max_frame_bytes");
      if (in_end_ - in_begin_ < 4 + len) {
        if (in_.size() < in_begin_ + 4 + len) {
          // Make room for the whole frame (bounded by max_frame_bytes above).
          in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_begin_));
          in_end_ -= in_begin_;
          in_begin_ = 0;
          in_.resize(std::max(in_.size(), 4 + len));
        }
        break;
      }
      const std::string_view frame(in_.data() + in_begin_ + 4, len);
      in_begin_ += 4 + len;
      report_frame(frame);
      if (dead_) return;
    }
    if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
    read_next();
  }

  void write_next() {
    if (writing_bytes_ > 0 || queued_.empty()) {
      if (closing_ && writing_bytes_ == 0 && queued_.empty()) shutdown();
      return;
    }
    writing_.swap(queued_);
    queued_.clear();
    writing_bytes_ = writing_.size();
    net::async_write(socket_, net::buffer(writing_), [self = me()](error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(error_code ec) {
    writing_bytes_ = 0;
    writing_.clear();
    if (ec) {
      if (closing_) return shutdown();
      return fail(1006, "write: " + ec.message());
    }
    if (dead_ && !closing_) return;
    write_next();
  }

  tcp::resolver resolver_;
  tcp::socket socket_;
  std::vector<char> in_;
  std::size_t in_begin_ = 0;
  std::size_t in_end_ = 0;
  std::string queued_;
  std::string writing_;
  std::size_t writing_bytes_ = 0;
  std::string where_;
  bool open_ = false;
  bool closing_ = false;
};

}  // namespace

std::shared_ptr<Session> make_tcp_session(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o) {
  return std::make_shared<TcpSession>(io, h, o);
}

}  // namespace parley::detail
