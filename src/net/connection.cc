#include "net/connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "net/preauth_budget.h"
#include "protocol/encoder.h"
#include "protocol/msgpack_encoder.h"
#include "protocol/websocket.h"
#include "net/thread_buffer.h"

namespace parley::net {

namespace {
// Slices per sendmsg: enough for dozens of queued tick frames, well under IOV_MAX.
constexpr int kMaxIov = 64;
// A drained queue keeps this many slots; a burst's larger array is released.
constexpr size_t kKeepQueueSlots = 4;
// Gathered writes up to this size are copied into one buffer (write_some).
constexpr size_t kFlattenBytes = 2048;
}  // namespace

Connection::~Connection() {
  release_preauth();
  // finish() has returned the queue's bytes already; a connection may be
  // destroyed by its io_context's shutdown, after the metrics are gone.
  if (queued_bytes_ != 0) drop_queued(head_);
}

void Connection::drop_queued(size_t from) {
  for (size_t i = from; i < queue_.size(); ++i) {
    queued_bytes_ -= queue_[i].bytes();
    if (queue_[i].backfill) backfill_bytes_ -= queue_[i].bytes();
    metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(queue_[i].bytes()),
                                    std::memory_order_relaxed);
  }
  queue_.resize(from);
}

void Connection::set_authenticated(size_t max_frame_bytes) {
  authenticated_ = true;
  ticket_.release();
  release_preauth();
  set_max_frame(max_frame_bytes);
}

bool Connection::account_preauth() {
  if (authenticated_ || finished_) return true;
  const size_t held = read_buffer_bytes();
  const auto delta = static_cast<int64_t>(held) - static_cast<int64_t>(preauth_charged_);
  preauth_charged_ = held;
  if (PreauthBudget::process().charge(delta)) return true;
  refuse(Refusal::kPreauthBudget);
  return false;
}

void Connection::release_preauth() {
  if (preauth_charged_ == 0) return;
  PreauthBudget::process().charge(-static_cast<int64_t>(preauth_charged_));
  preauth_charged_ = 0;
}

void Connection::refuse(Refusal why) {
  discard_input();
  release_preauth();
  if (handler_ && !close_requested_) handler_->on_refused(why);
  if (!closing()) close(1009, "message too big");
}

void Connection::start(std::shared_ptr<ConnectionHandler> handler) {
  handler_ = std::move(handler);
  if (ticket_) {
    ticket_.on_shed([weak = weak_from_this(), exec = executor()] {
      boost::asio::post(exec, [weak] {
        auto self = weak.lock();
        if (!self || self->authenticated_ || self->finished_) return;
        // Dropped, not closed gracefully: a peer that holds sockets open
        // would hold this one through a close handshake too.
        self->abort();
      });
    });
  }
  start_reading();
}

bool Connection::fits(const OutFrame& frame) const {
  const uint64_t n = frame.bytes();
  if (frame.backfill) {
    const uint64_t cap = queue_cap_ * kBackfillAllowance;
    return backfill_bytes_ + n <= cap || backfill_bytes_ == 0;
  }
  // The first frame always fits, however large: a fast reader of one big
  // tick batch is not a slow consumer.
  const uint64_t live = queued_bytes_ - backfill_bytes_;
  return live + n <= queue_cap_ || live == 0;
}

void Connection::to_peer_encoding(OutFrame& frame) const {
  if (encoding_ != protocol::Encoding::kMsgpack || frame.opcode != protocol::ws::kText) return;
  frame.opcode = protocol::ws::kBinary;
  if (frame.peer_encoded) return;
  std::string json;
  if (frame.gathered()) {
    for (const auto& part : frame.parts()) json.append(static_cast<const char*>(part.data()), part.size());
  }
  const std::string& text = frame.gathered() ? json : frame.owned();
  std::string mp;
  if (!protocol::append_msgpack_from_json(mp, text)) {
    // Never for frames the server wrote; a stored body that is not JSON would
    // be one. The peer is told, not sent bytes it cannot read.
    std::string err;
    protocol::encode_error(err, "", Error{ErrorCode::kInternal, "a frame could not be encoded"});
    protocol::append_msgpack_from_json(mp, err);
  }
  const bool backfill = frame.backfill;
  frame = OutFrame(std::move(mp));
  frame.opcode = protocol::ws::kBinary;
  frame.backfill = backfill;
}

bool Connection::send_corked(OutFrame&& frame) {
  if (closing()) return true;  // silently dropped: the peer is going away
  to_peer_encoding(frame);
  if (!fits(frame)) return false;
  enqueue(std::move(frame));
  if (!corked_) {
    corked_ = true;
    // Aliased: the writer is this connection's base, its lifetime the
    // connection's (weak: a connection that is gone is not written).
    std::shared_ptr<runtime::CorkedWriter> self(weak_from_this().lock(), this);
    runtime::TailScope::cork(self, executor());
  }
  return true;
}

bool Connection::send(OutFrame&& frame) {
  if (closing()) return true;  // silently dropped: the peer is going away
  to_peer_encoding(frame);
  if (!fits(frame)) return false;
  if (head_ == queue_.size() && !waiting_writable_ && !flushing_ && !broken_ && !finished_ &&
      frame.parts().size() <= OutFrame::kMaxParts) {
    return write_direct(frame);
  }
  enqueue(std::move(frame));
  flush();
  return true;
}

bool Connection::write_direct(OutFrame& frame) {
  // Nothing is queued: the frame goes straight from the caller's hands to
  // the socket, and only what the socket does not take is queued. The common
  // delivery (one frame, an idle socket) then costs no queue slot, no move of
  // the frame, no clock reads and none of the queue's byte accounting.
  uint8_t header[OutFrame::kMaxHeader];
  const size_t header_len = frame_header(frame, header);
  iovec iov[OutFrame::kMaxParts + 2];
  int count = 0;
  iov[count++] = {header, header_len};
  if (frame.prefix_len() > 0) iov[count++] = {const_cast<uint8_t*>(frame.prefix()), frame.prefix_len()};
  if (frame.gathered()) {
    for (const auto& part : frame.parts()) {
      iov[count++] = {const_cast<void*>(part.data()), part.size()};
    }
  } else {
    iov[count++] = {const_cast<char*>(frame.owned().data()), frame.owned().size()};
  }
  const size_t want = header_len + frame.bytes();
  const ssize_t n = write_some(iov, count);
  const int err = errno;
  if (n >= 0 && static_cast<size_t>(n) == want) {
    metrics_.observe(metrics::Stage::kWrite, 0);
    metrics_.inc(metrics_.frames_out);
    metrics_.inc(metrics_.bytes_out, frame.bytes());
    account(frame, want);
    if (!flush_transport()) {
      waiting_writable_ = true;
      wait_writable();
    }
    return true;
  }
  enqueue(std::move(frame));
  if (n > 0) head_sent_ = static_cast<size_t>(n);  // the rest waits for the socket
  if (n > 0 || err == EAGAIN || err == EWOULDBLOCK) {
    waiting_writable_ = true;
    wait_writable();
    return true;
  }
  flush();  // EINTR retries there; a failed socket is handled there, from the loop
  return true;
}

void Connection::heartbeat() {
  if (queue_.empty() && queue_.capacity() > 0) std::vector<OutFrame>().swap(queue_);
  if (closing()) return;
  ++unanswered_pings_;
  on_heartbeat();
}

void Connection::send_unbounded(OutFrame&& frame) {
  if (finished_) return;
  // Nothing queued (a ping, a pong): straight to the socket, as send() does.
  if (head_ == queue_.size() && !waiting_writable_ && !flushing_ && !broken_ &&
      frame.parts().size() <= OutFrame::kMaxParts) {
    write_direct(frame);
    return;
  }
  enqueue(std::move(frame));
  flush();
}

void Connection::enqueue(OutFrame&& frame) {
  uint8_t header[OutFrame::kMaxHeader];
  frame.set_header(header, frame_header(frame, header));
  const uint64_t n = frame.bytes();
  frame.enqueued_ns = steady_ns();
  queued_bytes_ += n;
  if (frame.backfill) backfill_bytes_ += n;
  metrics_.queued_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  queue_.push_back(std::move(frame));
}

void Connection::when_backfill_drained(std::function<void()> fn) {
  if (finished_) return;
  if (backfill_bytes_ == 0) {
    boost::asio::post(executor(), std::move(fn));
    return;
  }
  backfill_drained_ = std::make_unique<std::function<void()>>(std::move(fn));
}

void Connection::written(OutFrame& frame, int64_t now_ns) {
  const uint64_t n = frame.bytes();
  queued_bytes_ -= n;
  if (frame.backfill) {
    backfill_bytes_ -= n;
    if (backfill_bytes_ == 0 && backfill_drained_) {
      // Posted: the hook sends, and this runs inside the write loop.
      boost::asio::post(executor(), std::move(*backfill_drained_));
      backfill_drained_.reset();
    }
  }
  metrics_.queued_bytes.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
  metrics_.observe(metrics::Stage::kWrite, now_ns - frame.enqueued_ns);
  metrics_.inc(metrics_.frames_out);
  metrics_.inc(metrics_.bytes_out, n);
  account(frame, frame.wire_bytes());
  frame = OutFrame();  // release shared tick buffers now, not when the slot is reused
}

void Connection::account(const OutFrame& frame, uint64_t wire) {
  wire_bytes_out_ += wire;
  uint64_t rest = wire;
  const auto charges = frame.charges();
  for (const auto& c : charges) {
    c.to->add_wire(c.form, c.bytes);
    rest -= c.bytes;
  }
  if (!charges.empty()) {
    charges.front().to->add_wire(charges.front().form, rest);
  } else if (own_account_) {
    own_account_->add_wire(own_form_, rest);
  }
}

void Connection::send_last_and_close(OutFrame last, int code, std::string reason) {
  if (closing()) return;
  // Keep the frame partly sent (its bytes are on the wire); drop what waits
  // behind it: this peer will resume with `since`.
  drop_queued(head_ + (head_sent_ > 0 ? 1 : 0));
  to_peer_encoding(last);
  enqueue(std::move(last));
  close(code, std::move(reason));
}

void Connection::close(int code, std::string reason) {
  if (closing()) return;
  close_requested_ = true;
  closing_ = std::make_unique<Closing>(executor());
  closing_->code = code;
  closing_->reason = std::move(reason);
  arm_close_deadline();
  flush();
}

void Connection::arm_close_deadline() {
  closing_->deadline.expires_after(std::chrono::milliseconds(kCloseTimeoutMs));
  closing_->deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_) return;
    self->abort();
  });
}

void Connection::flush() {
  // What was corked leaves with this write (or the next, once writable).
  corked_ = false;
  // Re-entry (a transport's close hook queuing its close frame) is absorbed
  // by the loop below.
  if (finished_ || broken_ || waiting_writable_ || flushing_) return;
  flushing_ = true;
  for (;;) {
    if (!write_queued()) break;
    if (!close_requested_ || close_written_) break;
    if (!close_started_) {
      close_started_ = true;
      close_transport(closing_->code, closing_->reason);
      if (finished_) break;
      continue;  // write what the transport queued
    }
    close_written_ = true;
    close_written();
    break;
  }
  flushing_ = false;
}

bool Connection::write_queued() {
  while (head_ < queue_.size()) {
    iovec iov[kMaxIov];
    int count = 0;
    size_t skip = head_sent_;
    size_t want = 0;
    auto add = [&](const void* data, size_t len) {
      if (count == kMaxIov) return;
      if (skip >= len) {
        skip -= len;
        return;
      }
      iov[count].iov_base = const_cast<char*>(static_cast<const char*>(data) + skip);
      iov[count].iov_len = len - skip;
      want += len - skip;
      skip = 0;
      ++count;
    };
    for (size_t i = head_; i < queue_.size() && count < kMaxIov; ++i) {
      const OutFrame& f = queue_[i];
      add(f.header(), f.header_len());
      if (f.prefix_len() > 0) add(f.prefix(), f.prefix_len());
      if (f.gathered()) {
        for (const auto& part : f.parts()) add(part.data(), part.size());
      } else {
        add(f.owned().data(), f.owned().size());
      }
    }
    const ssize_t n = write_some(iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        waiting_writable_ = true;
        wait_writable();
        return false;
      }
      // The peer is gone. finish() runs the session's on_closed, which edits
      // the tables its caller may be walking (a sweep, a fan-out): it runs
      // from the loop, never from inside send().
      broken_ = true;
      abort_transport();
      boost::asio::post(executor(), [self = shared_from_this()] { self->finish(); });
      return false;
    }
    const int64_t now = steady_ns();
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      OutFrame& f = queue_[head_];
      const size_t remaining = f.wire_bytes() - head_sent_;
      if (left < remaining) {
        head_sent_ += left;
        break;
      }
      left -= remaining;
      head_sent_ = 0;
      written(f, now);
      ++head_;
    }
    if (static_cast<size_t>(n) < want) {
      waiting_writable_ = true;  // the socket took part: it is full
      wait_writable();
      return false;
    }
  }
  queue_.clear();
  head_ = 0;
  if (queue_.capacity() > kKeepQueueSlots) queue_.shrink_to_fit();
  if (!flush_transport()) {
    waiting_writable_ = true;  // a failed socket shows on the wait, or on the next read
    wait_writable();
    return false;
  }
  return true;
}

ssize_t Connection::write_some(const iovec* iov, int count) {
  if (count > 1) {
    // A small gathered write (a frame's header, "[", a slice of a tick buffer,
    // "]") is cheaper to copy into one buffer and send() than to hand the
    // kernel as iovecs: it imports the vector and copies segment by segment.
    char* const flat = thread_buffer<struct FlattenTag, kFlattenBytes>();
    size_t total = 0;
    for (int i = 0; i < count && total <= kFlattenBytes; ++i) total += iov[i].iov_len;
    if (total <= kFlattenBytes) {
      char* at = flat;
      for (int i = 0; i < count; ++i) {
        std::memcpy(at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
      }
      return ::send(native_fd(), flat, total, MSG_NOSIGNAL);
    }
  }
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(count);
  return ::sendmsg(native_fd(), &msg, MSG_NOSIGNAL);
}

void Connection::on_writable(bool ok) {
  waiting_writable_ = false;
  if (!ok) {
    abort();
    return;
  }
  flush();
}

void Connection::deliver(std::string_view payload, bool binary) {
  if (handler_ && !close_requested_) handler_->on_frame(payload, binary);
}

void Connection::finish() {
  if (finished_) return;
  finished_ = true;
  ticket_.release();
  release_preauth();
  if (closing_) closing_->deadline.cancel();
  backfill_drained_.reset();  // it holds the session, which holds this
  drop_queued(head_);  // never to be written; frees the shared tick buffers now
  queue_.clear();
  head_ = head_sent_ = 0;
  auto h = std::move(handler_);  // break the connection <-> handler cycle
  if (h) h->on_closed();
}

}  // namespace parley::net
