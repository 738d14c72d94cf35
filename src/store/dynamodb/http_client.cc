#include "store/dynamodb/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <charconv>
#include <optional>

namespace parley::store::dynamodb {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Result<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint ep;
  auto bad = [&](const char* why) { return Error{ErrorCode::kBadRequest, std::string(url) + ": " + why}; };
  if (url.rfind("https://", 0) == 0) {
    url.remove_prefix(8);
  } else if (url.rfind("http://", 0) == 0) {
    ep.tls = false;
    ep.port = 80;
    url.remove_prefix(7);
  } else {
    return bad("not an http:// or https:// URL");
  }
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  if (url.find('/') != std::string_view::npos) return bad("a path is not supported");
  const size_t colon = url.rfind(':');
  if (colon != std::string_view::npos && url.find(']') == std::string_view::npos) {
    std::string_view p = url.substr(colon + 1);
    unsigned v = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || end != p.data() + p.size() || v == 0 || v > 65535) return bad("bad port");
    ep.port = static_cast<uint16_t>(v);
    url = url.substr(0, colon);
  }
  if (url.empty()) return bad("no host");
  ep.host = std::string(url);
  ep.host_header = ep.host;
  if (ep.port != (ep.tls ? 443 : 80)) ep.host_header += ":" + std::to_string(ep.port);
  return ep;
}

struct HttpClient::Impl {
  Impl(const Endpoint& ep, uint32_t timeout_ms, const std::string& ca_file)
      : ep(ep), timeout(std::chrono::milliseconds(timeout_ms)), ctx(ssl::context::tls_client) {
    if (!ep.tls) return;
    ctx.set_verify_mode(ssl::verify_peer);
    boost::system::error_code ec;
    if (ca_file.empty()) {
      ctx.set_default_verify_paths(ec);
    } else {
      ctx.load_verify_file(ca_file, ec);
    }
    if (ec) trust = Error{ErrorCode::kUnavailable, "dynamodb: trust store " + ca_file + ": " + ec.message()};
  }

  // Runs one asynchronous step to completion (the stream's expiry bounds it).
  template <typename Start>
  beast::error_code run(Start&& start) {
    beast::error_code out = asio::error::would_block;
    start([&out](beast::error_code ec, auto&&...) { out = ec; });
    ioc.restart();
    ioc.run();
    return out;
  }

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  void close() {
    if (tls) {
      beast::error_code ec;
      beast::get_lowest_layer(*tls).socket().close(ec);
      tls.reset();
    }
    if (plain) {
      beast::error_code ec;
      plain->socket().close(ec);
      plain.reset();
    }
    buf.clear();
  }

  Status connect() {
    close();
    if (!trust) return trust;  // no certificate could be verified: not even tried
    tcp::resolver resolver(ioc);
    tcp::resolver::results_type found;
    beast::error_code ec = run([&](auto h) {
      resolver.async_resolve(ep.host, std::to_string(ep.port),
                             [&found, h](beast::error_code e, tcp::resolver::results_type r) {
                               found = std::move(r);
                               h(e);
                             });
    });
    if (ec) return fail("resolve", ec);
    if (ep.tls) {
      tls.emplace(ioc, ctx);
      if (!SSL_set_tlsext_host_name(tls->native_handle(), ep.host.c_str())) {
        return Error{ErrorCode::kUnavailable, "dynamodb: cannot set TLS SNI"};
      }
      tls->set_verify_callback(ssl::host_name_verification(ep.host));
    } else {
      plain.emplace(ioc);
    }
    lowest().expires_after(timeout);
    ec = run([&](auto h) { lowest().async_connect(found, [h](beast::error_code e, auto&&) { h(e); }); });
    if (ec) return fail("connect", ec);
    if (tls) {
      lowest().expires_after(timeout);
      ec = run([&](auto h) { tls->async_handshake(ssl::stream_base::client, h); });
      if (ec) return fail("TLS handshake", ec);
    }
    return Status::ok();
  }

  Error fail(const char* step, const beast::error_code& ec) {
    close();
    return Error{ErrorCode::kUnavailable, "dynamodb " + ep.host_header + ": " + step + ": " + ec.message()};
  }

  template <typename Stream>
  Result<HttpReply> exchange(Stream& s, http::request<http::string_body>& req) {
    lowest().expires_after(timeout);
    beast::error_code ec = run([&](auto h) { http::async_write(s, req, h); });
    if (ec) return fail("write", ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    lowest().expires_after(timeout);
    ec = run([&](auto h) { http::async_read(s, buf, parser, h); });
    if (ec) return fail("read", ec);
    auto res = parser.release();
    HttpReply out{res.result_int(), std::move(res.body())};
    if (!res.keep_alive()) close();
    return out;
  }

  Endpoint ep;
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  ssl::context ctx;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buf;
  Status trust;  // loading the trust store failed
};

HttpClient::HttpClient(Endpoint ep, uint32_t timeout_ms, std::string ca_file)
    : ep_(std::move(ep)), impl_(std::make_unique<Impl>(ep_, timeout_ms, ca_file)) {}

HttpClient::~HttpClient() = default;

Result<HttpReply> HttpClient::send(std::string_view method, std::string_view target,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   std::string body) {
  // Boost 1.74's beast::string_view is boost::string_view, not std's.
  const http::verb verb = http::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == http::verb::unknown) return Error{ErrorCode::kBadRequest, "http: unknown method"};
  http::request<http::string_body> req{verb, beast::string_view(target.data(), target.size()), 11};
  req.set(http::field::host, ep_.host_header);
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  req.keep_alive(true);
  // A kept-alive connection the server closed meanwhile fails at once: one
  // fresh connection is tried before the error goes up (the caller's retry
  // policy sees real outages, not idle closes).
  for (int attempt = 0;; ++attempt) {
    const bool reused = impl_->plain || impl_->tls;
    if (!reused) {
      if (Status s = impl_->connect(); !s) return s.error();
    }
    auto r = impl_->tls ? impl_->exchange(*impl_->tls, req) : impl_->exchange(*impl_->plain, req);
    if (r || !reused || attempt > 0) return r;
  }
}

}  // namespace parley::store::dynamodb
