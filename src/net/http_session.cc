#include "net/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "net/thread_buffer.h"
#include "protocol/websocket.h"

namespace parley::net {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(30);
// A request header above this (a 100 KB field, a flood of small ones) is 431.
constexpr size_t kMaxHeaderBytes = 8 * 1024;
// What the read buffer may hold: a header, or a slice of a body on its way
// into the request (Beast moves body bytes out as it parses them).
constexpr size_t kMaxBufferBytes = 16 * 1024;
// After a last response, unread input is dropped for at most this long / this much.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = 1 << 20;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace

HttpSession::HttpSession(boost::asio::ip::tcp::socket socket, unsigned loop,
                         metrics::ThreadMetrics& metrics, const HttpSessionOptions& opts,
                         PreauthTicket ticket)
    : stream_(std::move(socket)),
      buffer_(kMaxBufferBytes),
      ticket_(std::move(ticket)),
      loop_(loop),
      metrics_(metrics),
      opts_(opts) {
  if (opts_.tls) {
    tls_ = std::make_unique<TlsSession>(*opts_.tls);
    tls_stream_ = std::make_unique<TlsStream>(stream_, *tls_);
  }
}

HttpSession::~HttpSession() {
  if (holds_slot_ && opts_.release_slot) opts_.release_slot();
}

void HttpSession::start() {
  if (ticket_) {
    ticket_.on_shed([weak = weak_from_this(), exec = stream_.get_executor()] {
      boost::asio::post(exec, [weak] {
        auto self = weak.lock();
        if (!self || self->holds_slot_) return;
        // The pending read fails and the session ends with it.
        beast::error_code ignored;
        self->stream_.socket().close(ignored);
      });
    });
  }
  read_request();
}

void HttpSession::read_request() {
  parser_.reset();
  header_parser_.emplace();
  header_parser_->header_limit(kMaxHeaderBytes);
  stream_.expires_after(opts_.idle_timeout);
  auto done = [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) {
      if (!self->answer_read_error(ec)) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
      }
      return;
    }
    self->on_header();
  };
  with_stream([&](auto& s) { http::async_read_header(s, buffer_, *header_parser_, done); });
}

bool HttpSession::answer_read_error(beast::error_code ec) {
  keep_alive_ = false;
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    write_response(error_response(431, ErrorCode::kBadRequest, "request header fields too large"));
    return true;
  }
  if (ec == http::error::body_limit) {
    write_response(error_response(413, ErrorCode::kTooLarge, "body too large"));
    return true;
  }
  if (ec == http::error::bad_line_ending || ec == http::error::bad_method ||
      ec == http::error::bad_target || ec == http::error::bad_version ||
      ec == http::error::bad_field || ec == http::error::bad_value ||
      ec == http::error::bad_content_length || ec == http::error::bad_transfer_encoding ||
      ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension ||
      ec == http::error::bad_obs_fold) {
    write_response(error_response(400, ErrorCode::kBadRequest, "malformed request"));
    return true;
  }
  return false;  // EOF, timeout, reset: nobody to answer
}

void HttpSession::on_header() {
  const auto& req = header_parser_->get();
  keep_alive_ = req.keep_alive();
  version_ = req.version();
  // RFC 7230 3.3.3: a request whose Transfer-Encoding does not end in chunked
  // has no reliable length (400, then close), and one with both
  // Transfer-Encoding and Content-Length is a request-smuggling ingredient.
  // Beast refuses the second only when Content-Length comes first.
  if (req.find(http::field::transfer_encoding) != req.end() &&
      (!header_parser_->chunked() || req.find(http::field::content_length) != req.end())) {
    keep_alive_ = false;
    return write_response(error_response(400, ErrorCode::kBadRequest, "unsupported Transfer-Encoding"));
  }
  if (beast::websocket::is_upgrade(req)) {
    parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    upgrade();
    return;
  }
  if (path_of(req.target()) == "/v1/ws") {
    parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    return refuse_non_upgrade();
  }
  if (!opts_.handler) {
    keep_alive_ = keep_alive_ && header_parser_->is_done();
    write_response(not_found());
    return;
  }
  size_t body_limit = opts_.max_body_bytes;
  if (auto refusal = opts_.handler->check_header(req, body_limit)) {
    // The body is never read: the connection cannot go on past it.
    if (!header_parser_->is_done()) keep_alive_ = false;
    return write_response(std::move(*refusal));
  }
  // Beast checks its body limit while parsing the header, before the handler
  // has lowered it: a declared length over it is refused here, unread.
  if (const auto len = header_parser_->content_length(); len && *len > body_limit) {
    keep_alive_ = false;
    return write_response(error_response(413, ErrorCode::kTooLarge, "body too large"));
  }
  const bool done = header_parser_->is_done();
  parser_.emplace(std::move(*header_parser_));
  header_parser_.reset();
  parser_->body_limit(body_limit);
  if (done) return on_request();
  stream_.expires_after(kRequestTimeout);
  auto read = [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec) {
      if (!self->answer_read_error(ec)) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
      }
      return;
    }
    self->on_request();
  };
  with_stream([&](auto& s) { http::async_read(s, buffer_, *parser_, read); });
}

void HttpSession::on_request() {
  if (!holds_slot_) {
    if (opts_.take_slot && !opts_.take_slot()) {
      keep_alive_ = false;
      return write_response(error_response(503, ErrorCode::kUnavailable, "server connection limit reached"));
    }
    holds_slot_ = true;
    ticket_.release();
  }
  const auto& req = parser_->get();
  auto self = shared_from_this();
  auto exec = stream_.get_executor();
  opts_.handler->handle(req, loop_, [self, exec](HttpResponse res) {
    boost::asio::dispatch(exec, [self, res = std::move(res)]() mutable {
      self->write_response(std::move(res));
    });
  });
}

// The WebSocket path asked for without a valid upgrade: the status says what
// would have worked, as RFC 6455 4.2.1 and RFC 9110 (405 with Allow, 426 with
// Upgrade) ask, rather than a misleading 404.
void HttpSession::refuse_non_upgrade() {
  const auto& req = parser_->get();
  keep_alive_ = false;
  if (req.method() != http::verb::get) {
    HttpResponse res = error_response(405, ErrorCode::kBadRequest, "the WebSocket handshake is a GET");
    res.headers.emplace_back("Allow", "GET");
    return write_response(std::move(res));
  }
  if (req.version() < 11) {
    return write_response(
        error_response(400, ErrorCode::kBadRequest, "the WebSocket handshake needs HTTP/1.1"));
  }
  HttpResponse res = error_response(426, ErrorCode::kBadRequest, "WebSocket upgrade required");
  res.headers.emplace_back("Upgrade", "websocket");
  res.headers.emplace_back("Sec-WebSocket-Version", "13");
  write_response(std::move(res));
}

void HttpSession::upgrade() {
  // beast::websocket::is_upgrade() has checked GET, HTTP/1.1, Connection and
  // Upgrade; the rest of RFC 6455 4.2.1 is checked here.
  const auto& req = parser_->get();
  keep_alive_ = false;
  auto refuse = [this](int status, ErrorCode code, const char* msg) {
    write_response(error_response(status, code, msg));
  };
  if (path_of(req.target()) != "/v1/ws") return write_response(not_found());
  if (req.find(http::field::host) == req.end()) return refuse(400, ErrorCode::kBadRequest, "missing Host");
  const auto key = req[http::field::sec_websocket_key];
  if (!protocol::ws::valid_client_key(key)) {
    return refuse(400, ErrorCode::kBadRequest, "invalid Sec-WebSocket-Key");
  }
  const auto version = req[http::field::sec_websocket_version];
  if (version != "13") {
    if (version.empty()) return refuse(400, ErrorCode::kBadRequest, "missing Sec-WebSocket-Version");
    HttpResponse res = error_response(426, ErrorCode::kBadRequest, "unsupported Sec-WebSocket-Version");
    res.headers.emplace_back("Sec-WebSocket-Version", "13");
    return write_response(std::move(res));
  }
  const auto origin = req[http::field::origin];
  if (opts_.origin_ok && !opts_.origin_ok(origin)) {
    return refuse(403, ErrorCode::kForbidden, "origin not allowed");
  }
  // PROTOCOL.md "Binary encoding": the first offered subprotocol Parley
  // speaks, over every Sec-WebSocket-Protocol line in order.
  std::string_view subprotocol;
  for (auto [it, end] = req.equal_range(http::field::sec_websocket_protocol);
       it != end && subprotocol.empty(); ++it) {
    subprotocol = protocol::ws::select_subprotocol(it->value());
  }
  switch_protocols(protocol::ws::accept_key(key), std::string(origin), subprotocol);
}

void HttpSession::switch_protocols(std::string accept, std::string origin,
                                   std::string_view subprotocol) {
  std::string offered;
  if (!subprotocol.empty()) {
    offered = "Sec-WebSocket-Protocol: " + std::string(subprotocol) + "\r\n";
  }
  const auto encoding = subprotocol == protocol::ws::kSubprotocolMsgpack
                            ? protocol::Encoding::kMsgpack
                            : protocol::Encoding::kJson;
  auto head = std::make_shared<std::string>(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: " + accept + "\r\n" + offered + "Server: parley\r\n\r\n");
  stream_.expires_after(kRequestTimeout);
  auto written = [self = shared_from_this(), head, origin = std::move(origin),
                  encoding](beast::error_code ec, size_t) mutable {
        if (ec) {
          beast::error_code ignored;
          self->stream_.socket().close(ignored);
          return;
        }
        self->stream_.expires_never();
        if (self->holds_slot_) {
          // A keep-alive connection that upgrades after a request: it is
          // unauthenticated again until its hello.
          self->holds_slot_ = false;
          if (self->opts_.release_slot) self->opts_.release_slot();
          self->ticket_ = PreauthBudget::process().admit(peer_address(self->stream_.socket()));
        }
        const auto early = self->buffer_.cdata();
        std::string bytes(static_cast<const char*>(early.data()), early.size());
        // The TLS session, with whatever it holds of the client's next
        // records, goes on with the socket.
        auto ws = std::make_shared<WsConnection>(self->stream_.release_socket(), self->loop_,
                                                 self->metrics_, self->opts_.ws_max_message_bytes,
                                                 std::move(origin), std::move(bytes),
                                                 std::move(self->tls_));
        ws->hold_preauth(std::move(self->ticket_));
        ws->set_encoding(encoding);
        if (self->opts_.on_websocket) self->opts_.on_websocket(std::move(ws));
  };
  with_stream([&](auto& s) { boost::asio::async_write(s, boost::asio::buffer(*head), std::move(written)); });
}

void HttpSession::write_response(HttpResponse res) {
  auto msg = std::make_shared<http::response<http::string_body>>();
  msg->version(version_);
  msg->result(static_cast<http::status>(res.status));
  msg->set(http::field::server, "parley");
  msg->set(http::field::content_type, res.content_type);
  for (const auto& [name, value] : res.headers) msg->set(name, value);
  msg->keep_alive(keep_alive_);
  msg->body() = std::move(res.body);
  msg->prepare_payload();
  stream_.expires_after(kRequestTimeout);
  auto written = [self = shared_from_this(), msg](beast::error_code ec, size_t) {
    if (ec) return;
    if (!self->keep_alive_) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
      self->linger();
      return;
    }
    self->read_request();
  };
  with_stream([&](auto& s) { http::async_write(s, *msg, written); });
}

void HttpSession::linger() {
  constexpr size_t kSinkBytes = 4096;
  char* const sink = thread_buffer<struct LingerTag, kSinkBytes>();
  if (lingered_ == 0) stream_.expires_after(kLingerTime);
  stream_.async_read_some(boost::asio::buffer(sink, kSinkBytes),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->lingered_ += n;
                            if (ec || self->lingered_ > kLingerBytes) return;
                            self->linger();
                          });
}

HttpResponse error_response(int status, ErrorCode code, std::string_view msg) {
  return {status, "application/json", error_json(code, msg)};
}

HttpResponse error_response(const Error& e) {
  return {http_status(e.code), "application/json", error_json(e)};
}

HttpResponse not_found() { return error_response(404, ErrorCode::kBadRequest, "not found"); }

}  // namespace parley::net
