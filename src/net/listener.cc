#include "net/listener.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/host_port.h"

namespace parley::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;

Result<tcp::endpoint> parse_endpoint(const std::string& text) {
  auto hp = parse_host_port(text);
  if (!hp) return Error{ErrorCode::kBadRequest, text + ": " + hp.error().msg};
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(hp->ip, ec);
  if (ec) return Error{ErrorCode::kBadRequest, text + ": bad address"};
  return tcp::endpoint(addr, hp->port);
}

namespace {

template <typename Protocol, typename OnSocket>
class AcceptLoop : public Listener, public std::enable_shared_from_this<AcceptLoop<Protocol, OnSocket>> {
 public:
  AcceptLoop(runtime::LoopGroup& loops, OnSocket on_socket)
      : loops_(loops), acceptor_(loops.loop(0)), on_socket_(std::move(on_socket)) {}

  typename Protocol::acceptor& acceptor() { return acceptor_; }

  void run() { accept_next(); }

  void stop() override {
    asio::post(acceptor_.get_executor(), [self = this->shared_from_this()] {
      boost::system::error_code ec;
      self->acceptor_.close(ec);
    });
  }

  uint16_t port() const override {
    if constexpr (std::is_same_v<Protocol, tcp>) {
      boost::system::error_code ec;
      return acceptor_.local_endpoint(ec).port();
    } else {
      return 0;
    }
  }

 private:
  void accept_next() {
    const unsigned target = next_++ % loops_.size();
    acceptor_.async_accept(
        loops_.loop(target),
        [self = this->shared_from_this(), target](boost::system::error_code ec,
                                                  typename Protocol::socket socket) {
          if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
          if (!ec) {
            asio::post(self->loops_.loop(target),
                       [self, target, s = std::move(socket)]() mutable {
                         self->on_socket_(std::move(s), target);
                       });
          } else if (ec == asio::error::no_descriptors) {
            // Out of file descriptors: back off briefly instead of spinning.
            auto timer = std::make_shared<asio::steady_timer>(self->acceptor_.get_executor());
            timer->expires_after(std::chrono::milliseconds(50));
            timer->async_wait([self, timer](boost::system::error_code) { self->accept_next(); });
            return;
          }
          self->accept_next();
        });
  }

  runtime::LoopGroup& loops_;
  typename Protocol::acceptor acceptor_;
  OnSocket on_socket_;
  unsigned next_ = 0;
};

// Owns the shared accept loop so that stop() works after the owner lets go.
template <typename Loop>
class ListenerHandle : public Listener {
 public:
  explicit ListenerHandle(std::shared_ptr<Loop> loop, std::string unlink_path = {})
      : loop_(std::move(loop)), unlink_path_(std::move(unlink_path)) {}
  ~ListenerHandle() override { stop(); }
  void stop() override {
    loop_->stop();
    if (!unlink_path_.empty()) {
      ::unlink(unlink_path_.c_str());
      unlink_path_.clear();
    }
  }
  uint16_t port() const override { return loop_->port(); }

 private:
  std::shared_ptr<Loop> loop_;
  std::string unlink_path_;
};

}  // namespace

Result<std::unique_ptr<Listener>> listen_tcp(runtime::LoopGroup& loops, const std::string& address,
                                             OnTcpSocket on_socket) {
  auto ep = parse_endpoint(address);
  if (!ep) return ep.error();
  using Loop = AcceptLoop<tcp, OnTcpSocket>;
  auto loop = std::make_shared<Loop>(loops, std::move(on_socket));
  boost::system::error_code ec;
  auto& a = loop->acceptor();
  a.open(ep->protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(*ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot listen on " + address + ": " + ec.message()};
  loop->run();
  return std::unique_ptr<Listener>(new ListenerHandle<Loop>(loop));
}

Result<std::unique_ptr<Listener>> listen_unix(runtime::LoopGroup& loops, const std::string& path,
                                              OnUnixSocket on_socket) {
  using Loop = AcceptLoop<local, OnUnixSocket>;
  auto loop = std::make_shared<Loop>(loops, std::move(on_socket));
  ::unlink(path.c_str());
  boost::system::error_code ec;
  auto& a = loop->acceptor();
  a.open(local(), ec);
  if (!ec) a.bind(local::endpoint(path), ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "cannot listen on " + path + ": " + ec.message()};
  loop->run();
  return std::unique_ptr<Listener>(new ListenerHandle<Loop>(loop, path));
}

}  // namespace parley::net
