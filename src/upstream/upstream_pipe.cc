#include "upstream/upstream_pipe.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "common/clock.h"

namespace parley::upstream {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr int64_t kWarnEveryMs = 10'000;
constexpr int64_t kMaxIdleMs = 3'000;
}  // namespace

UpstreamPipe::UpstreamPipe(asio::io_context& ctx, NamespaceUpstream& ns,
                           metrics::Histogram& latency, PipeOptions opts, uint64_t batch_id_base)
    : ctx_(ctx),
      ns_(ns),
      latency_(latency),
      opts_(opts),
      batch_id_(batch_id_base),
      rng_(static_cast<uint32_t>(batch_id_base ^ static_cast<uint64_t>(steady_ns()))),
      timer_(ctx),
      resolver_(ctx) {}

void UpstreamPipe::push(std::string event_json) {
  if (stopped_) return;
  events_.push_back(std::move(event_json));
  if (ns_.queued.fetch_add(1, std::memory_order_relaxed) + 1 > static_cast<int64_t>(ns_.limit)) {
    drop_oldest();
  }
  schedule();
}

void UpstreamPipe::drop_oldest() {
  // The oldest event not in the request on the wire: a request's events are
  // either answered or become droppable again when it fails.
  if (events_.size() <= on_wire_) return;
  events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(on_wire_));
  if (batch_ > on_wire_) --batch_;
  ns_.queued.fetch_sub(1, std::memory_order_relaxed);
  const uint64_t dropped = ns_.dropped.fetch_add(1, std::memory_order_relaxed) + 1;
  const int64_t now = wall_ms();
  int64_t last = ns_.overflow_logged_ms.load(std::memory_order_relaxed);
  if (now - last >= kWarnEveryMs &&
      ns_.overflow_logged_ms.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    spdlog::warn("upstream {}/{}: queue full ({} events), dropping the oldest; {} dropped so far",
                 ns_.tenant, ns_.ns_name, ns_.limit, dropped);
  }
}

void UpstreamPipe::schedule() {
  if (phase_ != Phase::kIdle || events_.empty() || stopped_) return;
  phase_ = Phase::kTick;
  if (ns_.tick_ms == 0 || events_.size() >= opts_.max_batch_events) {
    asio::post(ctx_, [self = shared_from_this()] { self->send(); });
    return;
  }
  timer_.expires_after(std::chrono::milliseconds(ns_.tick_ms));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->send();
  });
}

void UpstreamPipe::send() {
  if (stopped_) return;
  if (batch_ == 0) {
    // A new batch: as many of the oldest events as fit.
    size_t bytes = 2;
    while (batch_ < events_.size() && batch_ < opts_.max_batch_events) {
      const size_t next = events_[batch_].size() + 1;
      if (batch_ > 0 && bytes + next > opts_.max_batch_bytes) break;
      bytes += next;
      ++batch_;
    }
    ++batch_id_;
    attempt_ = 0;
    resent_on_fresh_ = false;
  }
  batch_ = std::min(batch_, events_.size());  // the bound may have dropped some
  if (batch_ == 0) {
    phase_ = Phase::kIdle;
    return;
  }
  phase_ = Phase::kSending;
  on_wire_ = batch_;
  std::string body;
  body.reserve(2 + batch_ * (events_.front().size() + 1));
  body += '[';
  for (size_t i = 0; i < batch_; ++i) {
    if (i) body += ',';
    body += events_[i];
  }
  body += ']';
  req_ = {};
  req_.method(http::verb::post);
  req_.target(ns_.url.target);
  req_.version(11);
  req_.set(http::field::host, ns_.url.host_header);
  req_.set(http::field::user_agent, "parley-upstream/1");
  req_.set(http::field::content_type, "application/json");
  std::string key = ns_.api_key_now ? ns_.api_key_now() : std::string();
  req_.set(http::field::authorization, "Bearer " + (key.empty() ? ns_.api_key : key));
  req_.set("X-Parley-Tenant", ns_.tenant);
  req_.set("X-Parley-Namespace", ns_.ns_name);
  req_.set("X-Parley-Batch", fmt::format("{:x}", batch_id_));
  req_.set("X-Parley-Attempt", std::to_string(attempt_ + 1));
  req_.keep_alive(true);
  req_.body() = std::move(body);
  req_.prepare_payload();
  started_ns_ = steady_ns();
  // HTTP servers close idle keep-alive connections (Node after 5 s): one idle
  // that long is replaced rather than raced.
  if (stream_ && wall_ms() - last_answer_ms_ > kMaxIdleMs) close_stream();
  reused_ = stream_.has_value();
  if (reused_) return write();
  connect();
}

void UpstreamPipe::connect() {
  stream_.emplace(ctx_);
  stream_->expires_after(std::chrono::milliseconds(opts_.request_timeout_ms));
  auto on_connect = [self = shared_from_this()](boost::system::error_code ec) {
    if (self->stopped_) return;
    if (ec) return self->on_failure("connect", ec.message());
    self->write();
  };
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(ns_.url.host, ec);
  if (!ec) {
    stream_->async_connect(tcp::endpoint(addr, ns_.url.port), std::move(on_connect));
    return;
  }
  resolver_.async_resolve(
      ns_.url.host, std::to_string(ns_.url.port),
      [self = shared_from_this(), on_connect = std::move(on_connect)](
          boost::system::error_code rec, tcp::resolver::results_type results) mutable {
        if (self->stopped_) return;
        if (rec) return self->on_failure("resolve", rec.message());
        self->stream_->async_connect(
            results, [on_connect = std::move(on_connect)](boost::system::error_code cec,
                                                          const tcp::endpoint&) { on_connect(cec); });
      });
}

void UpstreamPipe::write() {
  stream_->expires_after(std::chrono::milliseconds(opts_.request_timeout_ms));
  http::async_write(*stream_, req_,
                    [self = shared_from_this()](boost::system::error_code ec, size_t) {
                      if (self->stopped_) return;
                      if (ec) return self->on_failure("write", ec.message());
                      self->read();
                    });
}

void UpstreamPipe::read() {
  parser_.emplace();
  parser_->body_limit(opts_.max_answer_bytes);
  stream_->expires_after(std::chrono::milliseconds(opts_.request_timeout_ms));
  http::async_read(*stream_, buf_, *parser_,
                   [self = shared_from_this()](boost::system::error_code ec, size_t) {
                     if (self->stopped_) return;
                     if (ec) return self->on_failure("answer", ec.message());
                     const auto& res = self->parser_->get();
                     self->on_answer(res.result_int(), res.keep_alive());
                   });
}

void UpstreamPipe::on_answer(unsigned status, bool keep_alive) {
  last_answer_ms_ = wall_ms();
  if (!keep_alive) close_stream();
  if (status < 200 || status > 299) {
    return on_failure("status", std::to_string(status));
  }
  latency_.observe_ns(steady_ns() - started_ns_);
  ns_.sent.fetch_add(batch_, std::memory_order_relaxed);
  ns_.queued.fetch_sub(static_cast<int64_t>(batch_), std::memory_order_relaxed);
  events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(batch_));
  batch_ = 0;
  on_wire_ = 0;
  if (failing_since_ms_) {
    spdlog::info("upstream {}/{}: {} answers again", ns_.tenant, ns_.ns_name, ns_.url.host_header);
    failing_since_ms_ = 0;
  }
  phase_ = Phase::kIdle;
  schedule();
}

void UpstreamPipe::on_failure(const char* what, const std::string& detail) {
  close_stream();
  on_wire_ = 0;
  ns_.failed.fetch_add(1, std::memory_order_relaxed);
  // A kept-alive connection the app server had closed in the meantime fails
  // without an answer; the batch goes again at once on a fresh connection
  // (once per batch), counted but not delayed.
  if (reused_ && !resent_on_fresh_ && std::string_view(what) != "status") {
    resent_on_fresh_ = true;
    ++attempt_;
    ns_.retried.fetch_add(1, std::memory_order_relaxed);
    return send();
  }
  const int64_t now = wall_ms();
  if (!failing_since_ms_) failing_since_ms_ = now;
  if (now - last_warn_ms_ >= kWarnEveryMs) {
    last_warn_ms_ = now;
    spdlog::warn("upstream {}/{}: {} failed ({}: {}); retrying with backoff, {} events waiting here",
                 ns_.tenant, ns_.ns_name, ns_.url.host_header, what, detail, events_.size());
  }
  // Exponential backoff with equal jitter: a crowd of nodes that lost the app
  // server together does not come back in step.
  const uint64_t cap = std::min<uint64_t>(
      opts_.backoff_max_ms, uint64_t{opts_.backoff_min_ms} << std::min(attempt_, 16u));
  const uint64_t delay = cap / 2 + std::uniform_int_distribution<uint64_t>(0, cap / 2)(rng_);
  ++attempt_;
  phase_ = Phase::kBackoff;
  timer_.expires_after(std::chrono::milliseconds(delay));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopped_) return;
    self->ns_.retried.fetch_add(1, std::memory_order_relaxed);
    self->send();
  });
}

void UpstreamPipe::close_stream() {
  if (!stream_) return;
  boost::system::error_code ec;
  stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_->close();
  stream_.reset();
  buf_.clear();
}

void UpstreamPipe::stop() {
  stopped_ = true;
  timer_.cancel();
  resolver_.cancel();
  if (stream_) {
    // Closed, not destroyed: an operation in flight completes (aborted) with
    // the stream still alive; its handler sees stopped_.
    boost::system::error_code ec;
    stream_->socket().close(ec);
  }
  ns_.queued.fetch_sub(static_cast<int64_t>(events_.size()), std::memory_order_relaxed);
  events_.clear();
}

}  // namespace parley::upstream
