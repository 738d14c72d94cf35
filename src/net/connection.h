// A client connection of any transport (WebSocket, raw TCP, Unix socket).
//
// Runs on one loop: every method must be called on that loop's thread, and
// every callback arrives there. Owned by shared_ptr; pending async operations
// keep it alive. Frames go through a byte-capped queue written with gathered
// non-blocking sends, as many queued frames per syscall as fit: a frame costs
// no async operation unless the socket is full, and then one wait covers all.
#pragma once

#include <sys/types.h>

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metrics.h"
#include "net/out_frame.h"
#include "protocol/client_op.h"
#include "net/preauth_budget.h"
#include "runtime/loop_tail.h"

namespace parley::net {

// Why a transport refused input before it became a frame.
enum class Refusal {
  kFrameTooLarge,  // a frame's header announced more than the current limit
  kPreauthBudget,  // unauthenticated bytes would pass the process's PreauthBudget
};

// The protocol layer above a connection. Called on the connection's loop.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  // One complete client frame (a WebSocket text message or a length-prefixed
  // payload). `binary` is true for a WebSocket binary message.
  virtual void on_frame(std::string_view payload, bool binary) = 0;
  // Input was refused and no more is read: the handler says why and closes
  // (if it does not, the connection closes with 1009).
  virtual void on_refused(Refusal) {}
  // Called once, after the transport is gone.
  virtual void on_closed() = 0;
};

enum class Transport { kWebSocket, kTcp, kUnix };

class Connection : public std::enable_shared_from_this<Connection>, private runtime::CorkedWriter {
 public:
  Connection(unsigned loop, metrics::ThreadMetrics& metrics) : loop_(loop), metrics_(metrics) {}
  virtual ~Connection();

  // Installs the handler and starts reading.
  void start(std::shared_ptr<ConnectionHandler> handler);

  // Queues a frame, taking it, and writes what the socket takes now; never
  // calls the handler (a failed send finishes the connection from the loop,
  // later), so callers may send while walking their own tables. Returns
  // false, queuing nothing (and leaving the frame alone), when the queue would
  // pass its byte cap: the caller decides (a slow consumer is disconnected).
  // Backfill frames (frame.backfill) have their own allowance of
  // kBackfillAllowance x the cap, so that live traffic and a resume each
  // stay bounded without starving one another.
  bool send(OutFrame&& frame);
  // Queues a frame like send() but writes it at the task's flush point
  // (runtime/loop_tail.h): the fan-out drain's, which writes it first and
  // together with the connection's delivery of the drain in one syscall (an
  // ack and the echo of its message), or the end of the task. The next
  // send(), flush_corked() or close writes it sooner, with what follows.
  bool send_corked(OutFrame&& frame);
  void flush_corked() { flush(); }
  // Holds corked frames that no write has taken yet.
  bool corked() const { return corked_; }
  // Drops what is queued but not yet started, queues `last`, then closes with
  // `code` once it is out (slow consumer, drain).
  void send_last_and_close(OutFrame last, int code, std::string reason);
  // Graceful close after the queued frames are written.
  void close(int code, std::string reason);
  // Drops the socket at once, queued frames and all (shutdown's last step).
  void abort() {
    abort_transport();
    finish();
  }

  // Before this is called the connection is unauthenticated: frames are
  // capped at the limit it was made with (server.preauth_frame_bytes, checked
  // from each frame's header) and what its reader holds is charged to the
  // PreauthBudget. The session calls it once, at `welcome`, with the tenant's
  // frame limit.
  void set_authenticated(size_t max_frame_bytes);
  bool authenticated() const { return authenticated_; }
  // The socket's place among unauthenticated ones (PreauthBudget), given
  // before start(): released at set_authenticated or close; if a newer
  // socket sheds it first, the connection is dropped (on its loop).
  void hold_preauth(PreauthTicket ticket) { ticket_ = std::move(ticket); }

  // Heartbeat: counts a period without news from the peer (any frame, or a
  // WebSocket pong, resets it); WebSocket also sends a ping. A connection
  // whose queue is empty gives its slots back here: the array corked sends
  // grew is kept between frames, not through an idle period.
  void heartbeat();
  int unanswered_pings() const { return unanswered_pings_; }

  // Backfill bytes queued (join backfill, history replies), and a one-shot hook
  // run on this loop (posted) once they are all written; dropped if the
  // connection finishes first. One hook at a time: a second replaces the first.
  uint64_t backfill_bytes() const { return backfill_bytes_; }
  void when_backfill_drained(std::function<void()> fn);

  // The encoding of the protocol's frames (PROTOCOL.md "Binary encoding:
  // MessagePack"): a WebSocket's from its subprotocol, a TCP or Unix
  // connection's from the welcome that answered "enc":"msgpack" on. Frames
  // queued as JSON text are converted to MessagePack, in binary WebSocket
  // frames, from then on.
  void set_encoding(protocol::Encoding e) { encoding_ = e; }
  protocol::Encoding encoding() const { return encoding_; }

  // Where this connection's bytes are counted once written (framing
  // included): fan-out frames by their charges (OutFrame::charge), the rest
  // and the framing of frames without charges to `own` (the session's tenant's
  // "-", set at welcome; null before: not counted by namespace) in `form`.
  void set_account(metrics::NamespaceTraffic* own, metrics::WireForm form) {
    own_account_ = own;
    own_form_ = form;
  }
  // Bytes written to the socket since the connection opened, framing included.
  uint64_t wire_bytes_out() const { return wire_bytes_out_; }

  void set_queue_cap(uint64_t bytes) { queue_cap_ = bytes; }
  uint64_t queue_cap() const { return queue_cap_; }
  uint64_t queued_bytes() const { return queued_bytes_; }
  // Slots of the send queue's array (kept between frames, given back by a
  // heartbeat while the queue is empty).
  size_t queue_slots() const { return queue_.capacity(); }
  bool closing() const { return close_requested_ || broken_ || finished_; }
  unsigned loop() const { return loop_; }
  virtual Transport transport() const = 0;
  // The Origin header of the WebSocket handshake ("" otherwise).
  const std::string& origin() const { return origin_; }

 protected:
  virtual void start_reading() = 0;
  // The socket's executor (posts, the close deadline).
  virtual boost::asio::any_io_executor executor() = 0;
  // What the transport adds to a heartbeat (a WebSocket ping).
  virtual void on_heartbeat() {}
  // The transport's framing in front of a frame's bytes (a WebSocket header,
  // a length prefix); at most OutFrame::kMaxHeader bytes.
  virtual size_t frame_header(const OutFrame& frame, uint8_t* out) const = 0;
  // One gathered non-blocking send: bytes written, or -1 with errno set.
  virtual ssize_t write_some(const struct iovec* iov, int count);
  // Sends what the transport itself still holds once the queue is written
  // (TLS records the socket did not take); false while some remains.
  virtual bool flush_transport() { return true; }
  virtual int native_fd() = 0;
  // Waits for the socket to take bytes again, then calls on_writable(ok).
  virtual void wait_writable() = 0;
  // Called once the queue is empty after close(): starts the transport's close
  // (it may queue a last frame, e.g. a WebSocket close frame).
  virtual void close_transport(int code, const std::string& reason) = 0;
  // Called once what close_transport queued is written.
  virtual void close_written() {}
  // Tears the socket down at once (close timed out, or fatal error).
  virtual void abort_transport() = 0;
  // The largest frame the reader accepts from now on.
  virtual void set_max_frame(size_t bytes) = 0;
  // Bytes the reader holds between reads (a cut frame, a fragmented message).
  virtual size_t read_buffer_bytes() const = 0;
  // Stops turning input into frames and frees the read buffers; later bytes
  // are read and dropped until the peer or the close deadline ends it.
  virtual void discard_input() = 0;

  // After each read: before authentication, charges the reader's buffer to
  // the PreauthBudget. False when refused (the connection is closing).
  bool account_preauth();
  // Refuses input: discards the rest and lets the handler answer and close.
  void refuse(Refusal why);

  // Queues a frame past the cap (control frames, a close frame) and writes.
  void send_unbounded(OutFrame&& frame);
  // Writes queued frames until the queue is empty or the socket is full.
  void flush();
  void on_writable(bool ok);
  void deliver(std::string_view payload, bool binary);
  // Idempotent: the transport is gone.
  void finish();
  void heard_from_peer() { unanswered_pings_ = 0; }
  bool close_started() const { return close_started_; }
  bool finished() const { return finished_; }

  unsigned loop_;
  int unanswered_pings_ = 0;
  metrics::ThreadMetrics& metrics_;
  std::string origin_;

 private:
  void enqueue(OutFrame&& frame);
  // runtime::CorkedWriter: the flush point.
  void write_corked() override {
    if (corked_) flush();
  }
  // A protocol frame in JSON, on a MessagePack connection: converted, binary.
  void to_peer_encoding(OutFrame& frame) const;
  // The queue's byte cap (see send()): false when `frame` does not fit.
  bool fits(const OutFrame& frame) const;
  // send() with nothing queued: writes the frame now, queuing only the rest.
  bool write_direct(OutFrame& frame);
  // Forgets the frames from queue_[from] on, with their byte accounting.
  void drop_queued(size_t from);
  // Sends from the queue's head until it is empty (true) or the socket is
  // full or failed (false).
  bool write_queued();
  // The byte accounting of a frame leaving the queue, written.
  void written(OutFrame& frame, int64_t now_ns);
  void arm_close_deadline();
  // A frame is on the wire, `wire` bytes with its framing: to the counters.
  void account(const OutFrame& frame, uint64_t wire);

  void release_preauth();

  // What only a closing connection needs.
  struct Closing {
    explicit Closing(const boost::asio::any_io_executor& exec) : deadline(exec) {}
    int code = 1000;
    std::string reason;
    boost::asio::steady_timer deadline;
  };

  std::shared_ptr<ConnectionHandler> handler_;
  size_t preauth_charged_ = 0;  // bytes this connection has charged to the PreauthBudget
  PreauthTicket ticket_;        // until authenticated
  // A vector with a moving head: a deque would allocate ~600 bytes per idle
  // connection up front. Frames are written in place: nothing points into the
  // queue between two sends, so it may grow (and move its elements) at will.
  std::vector<OutFrame> queue_;
  size_t head_ = 0;
  size_t head_sent_ = 0;         // bytes of the head frame (header included) already sent
  uint64_t queued_bytes_ = 0;    // payload bytes queued
  uint64_t backfill_bytes_ = 0;  // of which backfill frames
  std::unique_ptr<std::function<void()>> backfill_drained_;  // null: no hook (idle)
  uint64_t queue_cap_ = 4ull << 20;
  uint64_t wire_bytes_out_ = 0;
  metrics::NamespaceTraffic* own_account_ = nullptr;
  metrics::WireForm own_form_ = metrics::WireForm::kJson;
  bool authenticated_ = false;
  protocol::Encoding encoding_ = protocol::Encoding::kJson;
  bool waiting_writable_ = false;
  bool corked_ = false;  // listed at the flush point (send_corked)
  bool flushing_ = false;
  bool close_requested_ = false;
  bool close_started_ = false;
  bool close_written_ = false;
  bool finished_ = false;
  bool broken_ = false;  // a send failed: finish() is posted
  std::unique_ptr<Closing> closing_;  // from close() on
};

// How long a graceful close may take before the socket is dropped.
inline constexpr int kCloseTimeoutMs = 5000;
// Backfill may occupy up to this many times max_queue_bytes on its own.
inline constexpr uint64_t kBackfillAllowance = 4;

}  // namespace parley::net
