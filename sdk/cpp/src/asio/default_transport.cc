// The default transport: one io_context, run only from poll() on the
// caller's thread, and a session per connection (ws_session, tcp_session).
#include "parley/default_transport.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "tcp_session.h"
#include "url.h"
#include "ws_session.h"

namespace parley {
namespace {

namespace net = boost::asio;

// A URL the transport cannot dial still fails from poll(), as the contract asks.
class FailedSession final : public detail::Session {
 public:
  FailedSession(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o, std::string why)
      : Session(h, o), io_(io), why_(std::move(why)) {}
  void start(const detail::Url&) override {
    net::post(io_, [self = shared_from_this(), this] { report_closed(1006, why_); });
  }
  void send(std::string, bool) override {}
  void close(int, std::string_view) override {}
  void shutdown() override {}

 private:
  net::io_context& io_;
  std::string why_;
};

class DefaultTransport final : public Transport {
 public:
  DefaultTransport() : io_(1), work_(net::make_work_guard(io_)) {}
  ~DefaultTransport() override {
    work_.reset();
    io_.stop();
  }

  std::unique_ptr<Connection> connect(const std::string& url, const ConnectOptions& options,
                                      ConnectionHandler& handler) override {
    const auto parsed = detail::parse_url(url);
    std::shared_ptr<detail::Session> s;
    if (!parsed) {
      s = std::make_shared<FailedSession>(io_, handler, options,
                                          "not a ws://host:port/path or tcp://host:port URL: " + url);
      s->start(detail::Url{});
    } else {
      s = parsed->scheme == "ws" ? detail::make_ws_session(io_, handler, options)
                                 : detail::make_tcp_session(io_, handler, options);
      s->start(*parsed);
    }
    return std::make_unique<detail::SessionHandle>(std::move(s));
  }

  void poll(std::chrono::milliseconds wait) override {
    if (io_.stopped()) io_.restart();
    if (wait.count() > 0) io_.run_one_for(wait);
    io_.poll();
  }

 private:
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
};

}  // namespace

std::shared_ptr<Transport> make_default_transport() { return std::make_shared<DefaultTransport>(); }

}  // namespace parley
