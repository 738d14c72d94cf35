#include "hooks/hook_pool.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>

#include "common/clock.h"

namespace parley::hooks {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Protocol = asio::generic::stream_protocol;  // TCP or a Unix socket

namespace {
// An idle connection older than this is closed rather than raced against the
// app server closing it (Node closes idle ones after 5 s).
constexpr int64_t kMaxIdleMs = 3'000;
}  // namespace

Result<HookTarget> parse_hook_url(std::string_view url) {
  HookTarget t;
  constexpr std::string_view kUnix = "unix:";
  if (url.substr(0, kUnix.size()) == kUnix) {
    t.unix_path = std::string(url.substr(kUnix.size()));
    // sun_path holds 108 bytes with its terminating NUL.
    if (t.unix_path.empty() || t.unix_path[0] != '/' || t.unix_path.size() > 107) {
      return Error{ErrorCode::kBadRequest, "a unix: hook needs an absolute socket path of at most 107 bytes"};
    }
    t.http.host_header = "localhost";
    return t;
  }
  auto http = upstream::parse_upstream_url(url);
  if (!http) return http.error();
  t.http = std::move(*http);
  return t;
}

struct HookPool::Conn {
  explicit Conn(asio::io_context& ctx) : stream(ctx) {}
  beast::basic_stream<Protocol> stream;
  beast::flat_buffer buf;
  std::optional<http::response_parser<http::string_body>> parser;
  int64_t idle_since_ms = 0;
  bool used = false;  // it carried an answered request before this one

  void close() {
    boost::system::error_code ec;
    stream.socket().shutdown(Protocol::socket::shutdown_both, ec);
    stream.socket().close(ec);
  }
};

struct HookPool::Call {
  explicit Call(asio::io_context& ctx) : timer(ctx) {}
  http::request<http::string_body> req;
  std::function<void(CallResult)> done;
  asio::steady_timer timer;
  std::shared_ptr<Conn> conn;  // while on the wire
  bool finished = false;
  bool on_wire = false;
  bool resent = false;
};

HookPool::HookPool(asio::io_context& ctx, std::string url_text, HookTarget target)
    : ctx_(ctx), url_text_(std::move(url_text)), target_(std::move(target)) {}

void HookPool::call(std::string body, const std::string& api_key, const CallLimits& limits,
                    std::function<void(CallResult)> done) {
  auto c = std::make_shared<Call>(ctx_);
  c->done = std::move(done);
  max_inflight_ = limits.max_inflight;
  if (stopped_ || (inflight_ >= max_inflight_ && waiting_ >= limits.queue)) {
    c->finished = true;
    asio::post(ctx_, [c] { c->done(CallResult{CallResult::Kind::kFull, 0, {}, {}}); });
    return;
  }
  auto& req = c->req;
  req.method(http::verb::post);
  req.target(target_.http.target);
  req.version(11);
  req.set(http::field::host, target_.http.host_header);
  req.set(http::field::user_agent, "parley-hook/1");
  req.set(http::field::content_type, "application/json");
  req.set(http::field::authorization, "Bearer " + api_key);
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();
  c->timer.expires_after(std::chrono::milliseconds(limits.timeout_ms));
  c->timer.async_wait([self = shared_from_this(), c](boost::system::error_code ec) {
    if (ec || c->finished) return;
    // The answer, if it comes, is never read: the connection goes with it.
    if (c->conn) c->conn->close();
    self->finish(c, CallResult{CallResult::Kind::kTimeout, 0, {}, {}});
  });
  if (inflight_ < max_inflight_) return start(c);
  queue_.push_back(std::move(c));
  ++waiting_;
}

void HookPool::start(const std::shared_ptr<Call>& c) {
  ++inflight_;
  c->on_wire = true;
  const int64_t now = wall_ms();
  while (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    if (now - conn->idle_since_ms <= kMaxIdleMs) return run(c, std::move(conn));
    conn->close();
  }
  run(c, nullptr);
}

void HookPool::run(const std::shared_ptr<Call>& c, std::shared_ptr<Conn> conn) {
  auto write = [self = shared_from_this(), c](std::shared_ptr<Conn> conn) {
    http::async_write(conn->stream, c->req, [self, c, conn](boost::system::error_code ec, size_t) {
      if (c->finished) return;
      if (ec) return self->on_error(c, conn, "write", ec);
      conn->parser.emplace();
      conn->parser->body_limit(kMaxAnswerBytes);
      http::async_read(conn->stream, conn->buf, *conn->parser,
                       [self, c, conn](boost::system::error_code ec, size_t) {
                         if (c->finished) return;
                         if (ec) return self->on_error(c, conn, "answer", ec);
                         auto res = conn->parser->release();
                         c->conn.reset();
                         if (res.keep_alive() && !self->stopped_) {
                           conn->used = true;
                           conn->idle_since_ms = wall_ms();
                           self->idle_.push_back(conn);
                         } else {
                           conn->close();
                         }
                         self->finish(c, CallResult{CallResult::Kind::kAnswered, res.result_int(),
                                                    std::move(res.body()), {}});
                       });
    });
  };
  if (conn) {
    c->conn = conn;
    return write(std::move(conn));
  }
  conn = std::make_shared<Conn>(ctx_);
  c->conn = conn;
  auto on_connect = [self = shared_from_this(), c, conn, write](boost::system::error_code ec) {
    if (c->finished) return;
    if (ec) return self->on_error(c, conn, "connect", ec);
    write(conn);
  };
  if (!target_.unix_path.empty()) {
    conn->stream.async_connect(Protocol::endpoint(asio::local::stream_protocol::endpoint(target_.unix_path)),
                               std::move(on_connect));
    return;
  }
  const auto& url = target_.http;
  boost::system::error_code aec;
  const auto addr = asio::ip::make_address(url.host, aec);
  if (!aec) {
    conn->stream.async_connect(Protocol::endpoint(tcp::endpoint(addr, url.port)), std::move(on_connect));
    return;
  }
  // A host name: resolved per new connection (the system's resolver caches);
  // its first address is tried.
  auto resolver = std::make_shared<tcp::resolver>(ctx_);
  resolver->async_resolve(url.host, std::to_string(url.port),
                          [self = shared_from_this(), c, conn, resolver, on_connect](
                              boost::system::error_code ec, tcp::resolver::results_type results) {
                            if (c->finished) return;
                            if (ec || results.empty()) {
                              return self->on_error(c, conn, "resolve", ec ? ec : asio::error::host_not_found);
                            }
                            conn->stream.async_connect(Protocol::endpoint(results.begin()->endpoint()),
                                                       on_connect);
                          });
}

void HookPool::on_error(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn,
                        const char* what, const boost::system::error_code& ec) {
  conn->close();
  c->conn.reset();
  // A kept-alive connection the app server closed meanwhile: the request
  // never reached it, so it goes once more on a new connection.
  const bool stale = conn->used && !c->resent && std::string_view(what) != "connect" &&
                     (ec == http::error::end_of_stream || ec == asio::error::eof ||
                      ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
  if (stale && !stopped_) {
    c->resent = true;
    return run(c, nullptr);
  }
  finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, std::string(what) + ": " + ec.message()});
}

void HookPool::finish(const std::shared_ptr<Call>& c, CallResult r) {
  if (c->finished) return;
  c->finished = true;
  c->timer.cancel();
  if (c->on_wire) {
    --inflight_;
  } else {
    --waiting_;  // timed out (or stopped) in the queue; pump() skips it
  }
  auto done = std::move(c->done);
  done(std::move(r));
  pump();
}

void HookPool::pump() {
  while (!stopped_ && inflight_ < max_inflight_ && !queue_.empty()) {
    auto c = std::move(queue_.front());
    queue_.pop_front();
    if (c->finished) continue;
    --waiting_;
    start(c);
  }
}

void HookPool::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& conn : idle_) conn->close();
  idle_.clear();
  auto queued = std::move(queue_);
  queue_.clear();
  for (auto& c : queued) {
    if (!c->finished) finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, "stopping"});
  }
}

}  // namespace parley::hooks
