#include "ws_session.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <deque>
#include <type_traits>

#include "parley/version.h"

namespace parley::detail {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// ws:// runs on a plain tcp_stream, wss:// on an OpenSSL stream over one.
template <bool kTls>
struct StreamOf {
  using type = websocket::stream<beast::tcp_stream>;
  static type make(net::io_context& io, ssl::context*) { return type(io); }
};
template <>
struct StreamOf<true> {
  using type = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;
  static type make(net::io_context& io, ssl::context* ctx) { return type(io, *ctx); }
};

template <bool kTls>
class WsSession final : public Session {
 public:
  WsSession(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o, std::shared_ptr<ssl::context> ctx)
      : Session(h, o), ctx_(std::move(ctx)), resolver_(io), ws_(StreamOf<kTls>::make(io, ctx_.get())) {}

  void start(const Url& url) override {
    name_ = url.host;
    host_ = url.host + ":" + url.port;
    path_ = url.path;
    resolver_.async_resolve(url.host, url.port, [self = me()](beast::error_code ec, tcp::resolver::results_type r) {
      self->on_resolve(ec, std::move(r));
    });
  }

  void send(std::string frame, bool binary) override {
    if (dead_) return;
    out_bytes_ += frame.size();
    out_.emplace_back(std::move(frame), binary);
    if (out_bytes_ > options_.max_send_queue_bytes) return fail(1008, "send queue over its limit");
    if (open_) write_next();
  }

  void close(int code, std::string_view reason) override {
    if (dead_) return;
    // Beast allows one write at a time and a close counts as one: with a
    // frame still going out, drop the socket instead.
    if (!open_ || writing_) return abort();
    dead_ = true;
    // The stream times the close handshake out itself (timeout option below).
    ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(code), std::string(reason)),
                    [self = me()](beast::error_code) { self->shutdown(); });
  }

 private:
  std::shared_ptr<WsSession> me() { return std::static_pointer_cast<WsSession>(shared_from_this()); }
  static constexpr const char* kScheme = kTls ? "wss" : "ws";

  void shutdown() override {
    beast::error_code ec;
    resolver_.cancel();
    beast::get_lowest_layer(ws_).socket().close(ec);
  }

  void fail_with_reason() {
    const auto& r = ws_.reason();
    fail(static_cast<int>(r.code), std::string(r.reason));
  }

  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (dead_) return;
    if (ec) return fail(1006, "resolve " + host_ + ": " + ec.message());
    beast::get_lowest_layer(ws_).async_connect(results, [self = me()](beast::error_code e, const tcp::endpoint&) {
      self->on_connect(e);
    });
  }

  void on_connect(beast::error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, "connect " + host_ + ": " + ec.message());
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
    if constexpr (kTls) {
      // The certificate must name the URL's host (RFC 6125: DNS name, or an
      // IP address literal), checked by OpenSSL within its chain check; SNI
      // for a name.
      SSL* tls = ws_.next_layer().native_handle();
      net::ip::make_address(name_, ec);
      const bool is_ip = !ec;
      if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls), name_.c_str()) != 1
                : SSL_set1_host(tls, name_.c_str()) != 1 || SSL_set_tlsext_host_name(tls, name_.c_str()) != 1) {
        return fail(1006, "TLS: cannot check the certificate against host " + name_);
      }
      beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(30));
      ws_.next_layer().async_handshake(ssl::stream_base::client,
                                       [self = me()](beast::error_code e) { self->on_tls_handshake(e); });
      return;
    }
    upgrade();
  }

  void on_tls_handshake(beast::error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, "TLS handshake with " + host_ + ": " + tls_error(ec));
    beast::get_lowest_layer(ws_).expires_never();  // the WebSocket stream's own timeouts take over
    upgrade();
  }

  // Why a handshake failed, with the certificate check's verdict when it was that.
  std::string tls_error(const beast::error_code& ec) {
    std::string why = ec.message();
    if constexpr (kTls) {
      const long verdict = SSL_get_verify_result(ws_.next_layer().native_handle());
      if (verdict != X509_V_OK) why += " (" + std::string(X509_verify_cert_error_string(verdict)) + ")";
    }
    return why;
  }

  void upgrade() {
    websocket::stream_base::timeout t;
    t.handshake_timeout = std::chrono::seconds(30);
    t.idle_timeout = websocket::stream_base::none();  // the client's liveness check decides
    t.keep_alive_pings = false;
    ws_.set_option(t);
    ws_.read_message_max(options_.max_frame_bytes);
    const std::string sub = options_.subprotocol;
    ws_.set_option(websocket::stream_base::decorator([sub](websocket::request_type& req) {
      req.set(beast::http::field::user_agent, std::string("parley-cpp/") + PARLEY_CLIENT_VERSION);
      if (!sub.empty()) req.set(beast::http::field::sec_websocket_protocol, sub);
    }));
    ws_.async_handshake(host_, path_, [self = me()](beast::error_code e) { self->on_handshake(e); });
  }

  void on_handshake(beast::error_code ec) {
    if (dead_) return;
    if (ec) return fail(1006, std::string("handshake ") + kScheme + "://" + host_ + path_ + ": " + ec.message());
    open_ = true;
    read_next();
    if (!out_.empty()) write_next();
    report_open();
  }

  void read_next() {
    ws_.async_read(in_, [self = me()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (dead_) return;
    if (ec) {
      // A close frame from the server names the reason even when answering it
      // failed (the server, or a proxy, may drop the socket right after it).
      if (ws_.reason().code != websocket::close_code::none) return fail_with_reason();
      if (ec == websocket::error::closed) return fail(1005, "closed without a code");
      if (ec == websocket::error::message_too_big) return fail(1009, "frame over max_frame_bytes");
      return fail(1006, ec.message());
    }
    const auto data = in_.cdata();
    report_frame(std::string_view(static_cast<const char*>(data.data()), data.size()));
    in_.consume(in_.size());
    if (!dead_) read_next();
  }

  void write_next() {
    if (writing_ || out_.empty() || dead_) return;
    writing_ = true;
    ws_.text(!out_.front().second);
    ws_.async_write(net::buffer(out_.front().first), [self = me()](beast::error_code ec, std::size_t) {
      self->on_write(ec);
    });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    if (dead_) return;
    if (ec) {
      if (ws_.reason().code != websocket::close_code::none) return fail_with_reason();
      return fail(1006, "write: " + ec.message());
    }
    out_bytes_ -= out_.front().first.size();
    out_.pop_front();
    write_next();
  }

  std::shared_ptr<ssl::context> ctx_;  // wss: shared by the transport's sessions; outlives the stream
  tcp::resolver resolver_;
  typename StreamOf<kTls>::type ws_;
  beast::flat_buffer in_;
  std::deque<std::pair<std::string, bool>> out_;
  std::size_t out_bytes_ = 0;
  std::string name_;  // the URL's host, checked against the certificate
  std::string host_;
  std::string path_;
  bool open_ = false;
  bool writing_ = false;
};

}  // namespace

std::shared_ptr<Session> make_ws_session(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o) {
  return std::make_shared<WsSession<false>>(io, h, o, nullptr);
}

std::shared_ptr<Session> make_wss_session(net::io_context& io, ConnectionHandler& h, const ConnectOptions& o,
                                          std::shared_ptr<ssl::context> tls) {
  return std::make_shared<WsSession<true>>(io, h, o, std::move(tls));
}

}  // namespace parley::detail
