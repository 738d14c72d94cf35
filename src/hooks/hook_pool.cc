#include "hooks/hook_pool.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cmath>

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

int64_t now_ms() { return steady_ns() / 1'000'000; }
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
  Conn(asio::io_context& ctx, HookPool* owner) : stream(ctx), pool(owner) {
    ++pool->open_;
    pool->stats_->connections.fetch_add(1, std::memory_order_relaxed);
  }
  beast::basic_stream<Protocol> stream;
  beast::flat_buffer buf;
  std::optional<http::response_parser<http::string_body>> parser;
  // Alive while the pool runs: whatever holds a Conn (idle_, a handler) holds
  // the pool too. Only close() counts; a Conn dropped without it (the loop's
  // handlers destroyed at exit) touches neither the pool nor its stats.
  HookPool* pool;
  int64_t idle_since_ms = 0;
  bool used = false;       // the app server answered a request on it
  bool from_idle = false;  // it waited kept-alive, so the app server may have closed it
  bool expired = false;    // closed because a timed-out call's answer did not come in time
  bool closed = false;

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ec;
    stream.socket().shutdown(Protocol::socket::shutdown_both, ec);
    stream.socket().close(ec);
    --pool->open_;
    pool->stats_->connections.fetch_sub(1, std::memory_order_relaxed);
  }
};

struct HookPool::Call {
  // kQueued: waiting for a slot; kParked: in a slot, waiting for a connection;
  // kOnWire: its exchange holds a connection (past its deadline too);
  // kDone: its slot is given back.
  enum class State { kQueued, kParked, kOnWire, kDone };
  explicit Call(asio::io_context& ctx) : timer(ctx) {}
  http::request<http::string_body> req;
  std::function<void(CallResult)> done;
  asio::steady_timer timer;    // the deadline, then the late answer's grace
  std::shared_ptr<Conn> conn;  // while on the wire
  State state = State::kQueued;
  int64_t asked_ms = 0;
  int64_t started_ms = 0;      // took its slot
  int64_t grace_ms = 0;
  bool finished = false;       // done has run (or runs, posted)
  bool resent = false;
  bool throttled = false;      // counted once in connects_throttled
};

HookPool::HookPool(asio::io_context& ctx, std::string url_text, HookTarget target, PoolStats* stats)
    : ctx_(ctx), url_text_(std::move(url_text)), target_(std::move(target)), stats_(stats),
      connect_timer_(ctx) {}

// The sockets close with their Conns; nothing is counted at exit.
HookPool::~HookPool() = default;

void HookPool::call(std::string body, const std::string& api_key, const CallLimits& limits,
                    std::function<void(CallResult)> done) {
  auto c = std::make_shared<Call>(ctx_);
  c->done = std::move(done);
  max_inflight_ = std::max<size_t>(1, limits.max_inflight);
  const int64_t now = now_ms();
  if (stopped_ || (slots_ >= max_inflight_ && waiting_ >= limits.queue)) {
    c->finished = true;
    CallResult r{CallResult::Kind::kFull, 0, {}, {}, retry_hint(now)};
    asio::post(ctx_, [c, r = std::move(r)]() mutable { c->done(std::move(r)); });
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
  c->asked_ms = now;
  c->grace_ms = std::clamp<int64_t>(kLateGraceFactor * int64_t(limits.timeout_ms), kLateGraceMinMs,
                                    kLateGraceMaxMs);
  c->timer.expires_after(std::chrono::milliseconds(limits.timeout_ms));
  c->timer.async_wait([self = shared_from_this(), c](boost::system::error_code ec) {
    if (ec || c->finished) return;
    self->on_deadline(c);
  });
  queue_.push_back(std::move(c));
  ++waiting_;
  pump();
}

void HookPool::on_deadline(const std::shared_ptr<Call>& c) {
  const bool on_wire = c->state == Call::State::kOnWire;
  finish(c, CallResult{CallResult::Kind::kTimeout, 0, {}, {}});
  if (!on_wire || c->state != Call::State::kOnWire) return;
  // The client has its answer; the exchange keeps its connection and slot
  // until the late answer is read (and dropped), for at most the grace.
  c->timer.expires_after(std::chrono::milliseconds(c->grace_ms));
  c->timer.async_wait([c](boost::system::error_code ec) {
    if (ec || c->state != Call::State::kOnWire || !c->conn) return;
    c->conn->expired = true;
    c->conn->close();  // its pending operation fails: on_error gives the slot back
  });
}

void HookPool::start(const std::shared_ptr<Call>& c) {
  ++slots_;
  c->state = Call::State::kParked;
  c->started_ms = now_ms();
  parked_.push_back(c);
  serve_parked();
}

void HookPool::serve_parked() {
  if (stopped_) return;
  const int64_t now = now_ms();
  while (!parked_.empty()) {
    auto c = parked_.front();
    if (c->state != Call::State::kParked) {
      parked_.pop_front();
      continue;
    }
    if (auto conn = take_idle(now)) {
      parked_.pop_front();
      run(c, std::move(conn));
      continue;
    }
    if (may_connect(now)) {
      tokens_ -= 1;
      parked_.pop_front();
      run(c, nullptr);
      continue;
    }
    if (!c->throttled) {
      c->throttled = true;
      stats_->connects_throttled.fetch_add(1, std::memory_order_relaxed);
    }
    if (failures_ > 0 && open_ == 0) {
      // Connects are paused and nothing is open that could free up: failing
      // now serves the client better than failing at its deadline.
      parked_.pop_front();
      c->state = Call::State::kDone;
      --slots_;
      std::string why = "connect: paused " + std::to_string(std::max<int64_t>(0, next_connect_ms_ - now)) +
                        " ms more after " + std::to_string(failures_) + " failed connections";
      asio::post(ctx_, [self = shared_from_this(), c, why = std::move(why)]() mutable {
        self->finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, std::move(why)});
      });
      continue;
    }
    return arm_connect_timer(now);
  }
}

std::shared_ptr<HookPool::Conn> HookPool::take_idle(int64_t now) {
  while (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    if (!conn->closed && now - conn->idle_since_ms <= kMaxIdleMs) {
      conn->from_idle = true;
      return conn;
    }
    conn->close();
  }
  return nullptr;
}

bool HookPool::may_connect(int64_t now) {
  tokens_ = std::min(kConnectBurst, tokens_ + double(now - tokens_at_ms_) * kConnectsPerSecond / 1000.0);
  tokens_at_ms_ = now;
  return tokens_ >= 1 && now >= next_connect_ms_ && (failures_ == 0 || connecting_ == 0);
}

void HookPool::arm_connect_timer(int64_t now) {
  // After failures, an attempt in flight decides (serve_parked runs when it ends).
  if (connect_timer_armed_ || (failures_ > 0 && connecting_ > 0)) return;
  const int64_t token_at =
      now + (tokens_ >= 1 ? 0 : int64_t(std::ceil((1 - tokens_) * 1000.0 / kConnectsPerSecond)));
  const int64_t at = std::max(next_connect_ms_, token_at);
  connect_timer_armed_ = true;
  connect_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, at - now)));
  connect_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    self->connect_timer_armed_ = false;
    if (!ec) self->serve_parked();
  });
}

void HookPool::run(const std::shared_ptr<Call>& c, std::shared_ptr<Conn> conn) {
  c->state = Call::State::kOnWire;
  c->conn = conn;
  if (conn) return send(c, conn);
  conn = std::make_shared<Conn>(ctx_, this);
  c->conn = conn;
  ++connecting_;
  stats_->connects.fetch_add(1, std::memory_order_relaxed);
  auto on_connect = [self = shared_from_this(), c, conn](boost::system::error_code ec) {
    --self->connecting_;
    if (!ec && conn->closed) ec = asio::error::operation_aborted;
    if (ec) return self->on_error(c, conn, "connect", ec);
    if (c->finished) {
      // Its call timed out while connecting: the request is not worth sending
      // any more; the connection serves the next call.
      self->end_exchange(c, conn, true);
      return self->pump();
    }
    self->send(c, conn);
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
                            if (!ec && conn->closed) ec = asio::error::operation_aborted;
                            if (ec || results.empty()) {
                              --self->connecting_;
                              return self->on_error(c, conn, "resolve", ec ? ec : asio::error::host_not_found);
                            }
                            conn->stream.async_connect(Protocol::endpoint(results.begin()->endpoint()),
                                                       on_connect);
                          });
}

void HookPool::send(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn) {
  // Past its deadline too: a request on its way is answered on this
  // connection, and only then may the connection carry another.
  http::async_write(conn->stream, c->req, [self = shared_from_this(), c, conn](boost::system::error_code ec, size_t) {
    if (!ec && conn->closed) ec = asio::error::operation_aborted;
    if (ec) return self->on_error(c, conn, "write", ec);
    conn->parser.emplace();
    conn->parser->body_limit(kMaxAnswerBytes);
    http::async_read(conn->stream, conn->buf, *conn->parser, [self, c, conn](boost::system::error_code ec, size_t) {
      if (!ec && conn->closed) ec = asio::error::operation_aborted;
      if (ec) return self->on_error(c, conn, "answer", ec);
      self->on_answer(c, conn);
    });
  });
}

void HookPool::on_answer(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn) {
  auto res = conn->parser->release();
  conn->used = true;
  failures_ = 0;
  next_connect_ms_ = 0;
  const double held = double(now_ms() - c->started_ms);
  hold_ms_ = hold_ms_ < 0 ? held : hold_ms_ + (held - hold_ms_) / 8;
  const bool late = c->finished;
  end_exchange(c, conn, res.keep_alive());
  if (late) {
    stats_->late_answers.fetch_add(1, std::memory_order_relaxed);
    return pump();
  }
  finish(c, CallResult{CallResult::Kind::kAnswered, res.result_int(), std::move(res.body()), {}});
}

void HookPool::on_error(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn,
                        const char* what, const boost::system::error_code& ec) {
  const std::string_view phase(what);
  const bool sent = phase == "write" || phase == "answer";
  const bool late = c->finished;
  if (late && sent) stats_->late_closed.fetch_add(1, std::memory_order_relaxed);
  conn->close();
  // A kept-alive connection the app server closed meanwhile: the request
  // never reached it, so it goes once more on a new connection.
  const bool stale = conn->from_idle && !c->resent && !late && sent && !stopped_ &&
                     (ec == http::error::end_of_stream || ec == asio::error::eof ||
                      ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
  // Refused, or closed by the app server before it answered anything: a
  // connection that failed. One we closed at its grace reached a live (slow)
  // app server, and pausing connects would fail the next calls at once.
  if (!conn->used && !stale && !conn->expired) connection_failed(now_ms());
  if (stale) {
    c->resent = true;
    c->conn.reset();
    c->state = Call::State::kParked;  // keeps its slot
    parked_.push_front(c);
    return serve_parked();
  }
  end_exchange(c, conn, false);
  if (late) return pump();
  finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, std::string(what) + ": " + ec.message()});
}

void HookPool::end_exchange(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn, bool reusable) {
  c->conn.reset();
  c->state = Call::State::kDone;
  c->timer.cancel();  // the deadline (finish cancels it too) or the grace
  --slots_;
  if (reusable && !stopped_ && !conn->closed) {
    conn->idle_since_ms = now_ms();
    idle_.push_back(conn);
  } else {
    conn->close();
  }
  serve_parked();  // a parked call takes the connection
}

void HookPool::connection_failed(int64_t now) {
  ++failures_;
  const int64_t pause = std::min<int64_t>(kBackoffMaxMs, kBackoffFirstMs << std::min<uint32_t>(failures_ - 1, 20));
  next_connect_ms_ = now + pause;
}

void HookPool::finish(const std::shared_ptr<Call>& c, CallResult r) {
  if (c->finished) return;
  c->finished = true;
  c->timer.cancel();
  if (c->state == Call::State::kQueued) {
    --waiting_;  // timed out (or stopped) in the queue; pump() skips it
  } else if (c->state == Call::State::kParked) {
    c->state = Call::State::kDone;  // serve_parked() skips it
    --slots_;
  }  // kOnWire: the exchange gives its slot back when it ends
  auto done = std::move(c->done);
  done(std::move(r));
  pump();
}

int HookPool::retry_hint(int64_t now) {
  while (!queue_.empty() && queue_.front()->finished) queue_.pop_front();
  double wait = 0;
  if (hold_ms_ >= 0) wait = double(slots_ + waiting_) * hold_ms_ / double(max_inflight_);
  if (!queue_.empty()) wait = std::max(wait, double(now - queue_.front()->asked_ms));
  return std::clamp(int(std::lround(wait)), kRetryMinMs, kRetryMaxMs);
}

void HookPool::pump() {
  while (!stopped_ && slots_ < max_inflight_ && !queue_.empty()) {
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
  connect_timer_.cancel();
  for (auto& conn : idle_) conn->close();
  idle_.clear();
  auto parked = std::move(parked_);
  parked_.clear();
  auto queued = std::move(queue_);
  queue_.clear();
  for (auto& c : parked) {
    if (c->state == Call::State::kParked) finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, "stopping"});
  }
  for (auto& c : queued) {
    if (!c->finished) finish(c, CallResult{CallResult::Kind::kFailed, 0, {}, "stopping"});
  }
}

}  // namespace parley::hooks
