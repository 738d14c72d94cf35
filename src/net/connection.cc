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

bool Connection::send(OutFrame&& frame) {
  if (closing()) return true;  // silently dropped: the peer is going away
  const uint64_t n = frame.bytes();
  if (frame.backfill) {
    const uint64_t cap = queue_cap_ * kBackfillAllowance;
    if (backfill_bytes_ + n > cap && backfill_bytes_ > 0) return false;
  } else {
    // The first frame always fits, however large: a fast reader of one big
    // tick batch is not a slow consumer.
    const uint64_t live = queued_bytes_ - backfill_bytes_;
    if (live + n > queue_cap_ && live > 0) return false;
  }
  if (!writing_ && head_ == queue_.size()) {
    // Nothing ahead of it: straight to the transport, not through the queue.
    count_in(frame);
    writing_ = true;
    inflight_.emplace(std::move(frame));
    write_frame(*inflight_);
    return true;
  }
  enqueue(std::move(frame));
  if (!writing_) write_next();
  return true;
}

void Connection::count_in(OutFrame& frame) {
  const uint64_t n = frame.bytes();
  frame.enqueued_ns = steady_ns();
  queued_bytes_ += n;
  if (frame.backfill) backfill_bytes_ += n;
  metrics_.queued_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
}

void Connection::enqueue(OutFrame&& frame) {
  count_in(frame);
  queue_.push_back(std::move(frame));
}

void Connection::dequeued(const OutFrame& frame) {
  const uint64_t n = frame.bytes();
  queued_bytes_ -= n;
  if (frame.backfill) backfill_bytes_ -= n;
  metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
}

void Connection::send_last_and_close(OutFrame last, int code, std::string reason) {
  if (closing()) return;
  // Keep the frame in flight; drop what waits behind it: this peer will
  // resume with `since`.
  for (size_t i = head_; i < queue_.size(); ++i) dequeued(queue_[i]);
  queue_.resize(head_);
  enqueue(std::move(last));
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
  inflight_.emplace(std::move(queue_[head_++]));
  write_frame(*inflight_);
}

void Connection::on_write_done(bool ok) {
  const uint64_t n = inflight_->bytes();
  dequeued(*inflight_);
  if (ok) {
    metrics_.observe(admin::Stage::kWrite, steady_ns() - inflight_->enqueued_ns);
    metrics_.inc(metrics_.frames_out);
    metrics_.inc(metrics_.bytes_out, n);
  }
  inflight_.reset();  // release shared buffers now
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
