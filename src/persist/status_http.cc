#include "persist/status_http.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "common/host_port.h"

namespace parley::persist {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct StatusHttp::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  Handler handler;

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;  // closed: stopping
      serve(std::move(s));
      accept();
    });
  }

  void serve(tcp::socket s) {
    timeval tv{2, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    boost::beast::flat_buffer buf(8192);
    http::request_parser<http::empty_body> parser;
    parser.header_limit(8192);
    boost::system::error_code ec;
    http::read(s, buf, parser, ec);
    if (ec) return;
    const auto& req = parser.get();
    StatusPage page{404, "text/plain", "not found\n"};
    if (req.method() == http::verb::get) page = handler(std::string(req.target()));
    http::response<http::string_body> res{static_cast<http::status>(page.status), req.version()};
    res.set(http::field::content_type, page.content_type);
    res.keep_alive(false);
    res.body() = std::move(page.body);
    res.prepare_payload();
    http::write(s, res, ec);
    s.shutdown(tcp::socket::shutdown_both, ec);
  }
};

StatusHttp::StatusHttp() : impl_(std::make_unique<Impl>()) {}

StatusHttp::~StatusHttp() { stop(); }

Status StatusHttp::start(const std::string& listen, Handler handler) {
  auto hp = parse_host_port(listen);
  if (!hp) return Error{ErrorCode::kBadRequest, "persist.listen: " + hp.error().msg};
  boost::system::error_code ec;
  const tcp::endpoint ep(asio::ip::make_address(hp->ip, ec), hp->port);
  if (ec) return Error{ErrorCode::kBadRequest, "persist.listen: " + ec.message()};
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(64, ec);
  if (ec) return Error{ErrorCode::kUnavailable, "persist.listen " + listen + ": " + ec.message()};
  port_ = a.local_endpoint().port();
  impl_->handler = std::move(handler);
  impl_->accept();
  thread_ = std::thread([this] { impl_->ioc.run(); });
  return Status::ok();
}

void StatusHttp::stop() {
  if (!thread_.joinable()) return;
  asio::post(impl_->ioc, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->ioc.stop();
  thread_.join();
}

}  // namespace parley::persist
