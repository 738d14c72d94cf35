// The default transport: one io_context, run only from poll() on the
// caller's thread, and a session per connection (ws_session, tcp_session).
#include "parley/default_transport.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

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
  explicit DefaultTransport(DefaultTransportOptions options)
      : options_(std::move(options)), io_(1), work_(net::make_work_guard(io_)) {}
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
                                          "not a ws://host:port/path, wss://host:port/path or tcp://host:port URL: " + url);
      s->start(detail::Url{});
    } else if (parsed->scheme == "wss") {
      std::string why;
      auto tls = tls_context(why);
      if (tls) {
        s = detail::make_wss_session(io_, handler, options, std::move(tls));
        s->start(*parsed);
      } else {
        s = std::make_shared<FailedSession>(io_, handler, options, why);
        s->start(detail::Url{});
      }
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
  // Made at the first wss:// connect (a ws-only client never loads CAs) and
  // kept: every TLS session shares its CA store.
  std::shared_ptr<net::ssl::context> tls_context(std::string& why) {
    if (tls_) return tls_;
    boost::system::error_code ec;
    auto ctx = std::make_shared<net::ssl::context>(net::ssl::context::tls_client);
    ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1,
                     ec);
    if (!ec) ctx->set_verify_mode(net::ssl::verify_peer, ec);
    if (ec) {
      why = "TLS: " + ec.message();
      return nullptr;
    }
    if (options_.tls_ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
      if (ec) why = "TLS: cannot load the system's CA certificates: " + ec.message();
    } else {
      std::FILE* f = std::fopen(options_.tls_ca_file.c_str(), "r");
      if (!f) {
        why = "TLS: cannot load the CA file " + options_.tls_ca_file + ": " + std::strerror(errno);
        return nullptr;
      }
      std::fclose(f);
      ctx->load_verify_file(options_.tls_ca_file, ec);
      if (ec) why = "TLS: cannot load the CA file " + options_.tls_ca_file + ": no PEM certificate in it";
    }
    if (ec) return nullptr;
    tls_ = std::move(ctx);
    return tls_;
  }

  DefaultTransportOptions options_;
  std::shared_ptr<net::ssl::context> tls_;
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
};

}  // namespace

std::shared_ptr<Transport> make_default_transport() { return make_default_transport(DefaultTransportOptions{}); }

std::shared_ptr<Transport> make_default_transport(const DefaultTransportOptions& options) {
  return std::make_shared<DefaultTransport>(options);
}

}  // namespace parley
