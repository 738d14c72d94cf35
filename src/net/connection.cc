#include "net/connection.h"

#include "common/clock.h"

namespace parley::net {

Connection::~Connection() {
  metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(queued_bytes_), std::memory_order_relaxed);
}

void Connection::start(std::shared_ptr<ConnectionHandler> handler) {
  handler_ = std::move(handler);
  start_reading();
}

bool Connection::send(OutFrame frame) {
  if (closing()) return true;  // silently dropped: the peer is going away
  const size_t n = frame.bytes();
  if (queued_bytes_ + n > queue_cap_ && queued_bytes_ > 0) return false;
  frame.enqueued_ns = steady_ns();
  queued_bytes_ += n;
  metrics_.queued_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  queue_.push_back(std::move(frame));
  if (!writing_) write_next();
  return true;
}

void Connection::send_last_and_close(OutFrame last, int code, std::string reason) {
  if (closing()) return;
  // Keep the frame being written (queue_[head_] is in flight when writing_:
  // head_ moves on in on_write_done); drop the rest: this peer will resume
  // with `since`.
  const size_t keep = head_ + (writing_ ? 1 : 0);
  uint64_t dropped = 0;
  for (size_t i = keep; i < queue_.size(); ++i) dropped += queue_[i].bytes();
  queue_.resize(keep);
  queued_bytes_ -= dropped;
  metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(dropped), std::memory_order_relaxed);
  last.enqueued_ns = steady_ns();
  queued_bytes_ += last.bytes();
  metrics_.queued_bytes.fetch_add(static_cast<int64_t>(last.bytes()), std::memory_order_relaxed);
  queue_.push_back(std::move(last));
  close(code, std::move(reason));
  if (!writing_) write_next();
}

void Connection::close(int code, std::string reason) {
  if (closing()) return;
  close_requested_ = true;
  close_code_ = code;
  close_reason_ = std::move(reason);
  arm_close_deadline();
  if (!writing_) write_next();
}

void Connection::arm_close_deadline() {
  close_deadline_ = std::make_unique<boost::asio::steady_timer>(exec_);
  close_deadline_->expires_after(std::chrono::milliseconds(kCloseTimeoutMs));
  close_deadline_->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_) return;
    self->abort_transport();
    self->finish();
  });
}

void Connection::write_next() {
  if (finished_) return;
  if (head_ == queue_.size()) {
    queue_.clear();
    head_ = 0;
    writing_ = false;
    if (close_requested_) close_transport(close_code_, close_reason_);
    return;
  }
  writing_ = true;
  write_frame(queue_[head_]);
}

void Connection::on_write_done(bool ok) {
  if (head_ < queue_.size()) {
    const OutFrame& f = queue_[head_];
    const size_t n = f.bytes();
    queued_bytes_ -= n;
    metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
    if (ok) {
      metrics_.observe(admin::Stage::kWrite, steady_ns() - f.enqueued_ns);
      metrics_.inc(metrics_.frames_out);
      metrics_.inc(metrics_.bytes_out, n);
    }
    queue_[head_] = OutFrame();  // release shared buffers now
    ++head_;
  }
  if (!ok) {
    writing_ = false;
    abort_transport();
    finish();
    return;
  }
  write_next();
}

void Connection::deliver(std::string_view payload, bool binary) {
  if (handler_ && !close_requested_) handler_->on_frame(payload, binary);
}

void Connection::finish() {
  if (finished_) return;
  finished_ = true;
  if (close_deadline_) close_deadline_->cancel();
  auto h = std::move(handler_);  // break the connection <-> handler cycle
  if (h) h->on_closed();
}

}  // namespace parley::net
