// One loop's keep-alive HTTP connections to one hook's URL, the calls in
// flight on them and the calls waiting for a slot (Boost.Beast's client).
//
// Runs on one loop; every method is called there, and every completion runs
// there. A slot is one connection's exchange: at most `max_inflight` are
// taken; up to `queue` more calls wait in order; past that a call is refused
// as full, with a retry hint that grows with the wait ahead of it. Each call
// has one deadline, from call() on, waiting included: when it passes the call
// completes as a timeout at once, but an exchange already on the wire keeps
// its connection and its slot (HTTP/1.1 sends one request per connection at a
// time) until the late answer is read and dropped; only when that answer has
// not come `late_grace_ms` after the deadline, or comes broken, is the
// connection closed. So an app server that is slow gets fewer calls, not more
// connections. New connections are bounded per pool: a token bucket
// (kConnectBurst, kConnectsPerSecond) and, after connections that failed
// before any answer, an exponential pause with one attempt at a time; a call
// that needs a connection waits for one (in its slot), or fails at once when
// nothing is open and connects are paused. A call is sent once; only when a
// kept-alive connection turns out closed by the app server before any answer
// (HTTP servers close idle ones) does it go again, once, on a new connection.
// Why not upstream::UpstreamPipe: that is a queue of events sent one batch at
// a time and retried until answered; a hook needs many requests at once,
// each answered or given up by its deadline, and the answer's body.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "upstream/upstream_url.h"

namespace parley::hooks {

// Where a hook's requests go: `http://host[:port][/path]` (upstream's URL
// rules), or `unix:<absolute path of a socket>`, whose requests target `/`.
struct HookTarget {
  std::string unix_path;      // set for unix:
  upstream::UpstreamUrl http; // otherwise
};
Result<HookTarget> parse_hook_url(std::string_view url);

struct CallResult {
  enum class Kind { kAnswered, kTimeout, kFailed, kFull };
  Kind kind = Kind::kFailed;
  unsigned status = 0;   // kAnswered
  std::string body;      // kAnswered
  std::string detail;    // kFailed: what failed, for the log
  int retry_ms = 0;      // kFull: what the refused client is told to wait
};

struct CallLimits {
  uint32_t timeout_ms = 200;
  uint32_t max_inflight = 64;
  uint32_t queue = 256;
};

// What the pools of one hook add to (parley_hook_* of metrics/metric_list.h),
// summed over loops. Any thread.
struct PoolStats {
  std::atomic<uint64_t> connects{0};            // new connections attempted
  std::atomic<uint64_t> connects_throttled{0};  // calls that found new connections bounded
  std::atomic<uint64_t> late_answers{0};        // read after their call's deadline, dropped
  std::atomic<uint64_t> late_closed{0};         // closed with a timed-out call's answer missing
  std::atomic<int64_t> connections{0};          // open: connecting, busy or idle
};

class HookPool : public std::enable_shared_from_this<HookPool> {
 public:
  // Largest answer body read; a longer one fails the call.
  static constexpr size_t kMaxAnswerBytes = 1 << 20;
  // How long past a call's deadline its late answer is awaited before the
  // connection is closed: 10 x timeout_ms within [1 s, 60 s].
  static constexpr int64_t kLateGraceFactor = 10;
  static constexpr int64_t kLateGraceMinMs = 1'000;
  static constexpr int64_t kLateGraceMaxMs = 60'000;
  // New connections: a bucket of kConnectBurst refilled at kConnectsPerSecond;
  // after n connections in a row failed before any answer, none for
  // min(kBackoffFirstMs x 2^(n-1), kBackoffMaxMs), then one at a time until
  // one answers.
  static constexpr double kConnectBurst = 16;
  static constexpr double kConnectsPerSecond = 32;
  static constexpr int64_t kBackoffFirstMs = 50;
  static constexpr int64_t kBackoffMaxMs = 1'000;
  // A full pool's retry hint: the expected wait for the calls ahead of a new
  // one, (taken slots + waiting) / max_inflight x the mean time an exchange
  // holds its slot (late answers in full), or the oldest waiting call's wait
  // if longer, within [kRetryMinMs, kRetryMaxMs].
  static constexpr int kRetryMinMs = 100;
  static constexpr int kRetryMaxMs = 5'000;

  // `stats` outlives the pool (the service's, per hook).
  HookPool(boost::asio::io_context& ctx, std::string url_text, HookTarget target, PoolStats* stats);
  ~HookPool();

  const std::string& url_text() const { return url_text_; }
  size_t inflight() const { return slots_; }
  size_t waiting() const { return waiting_; }

  // Sends `body` (JSON) with `api_key` as its Bearer. `done` runs once, on
  // this loop, never inside call().
  void call(std::string body, const std::string& api_key, const CallLimits& limits,
            std::function<void(CallResult)> done);
  // Ends every call not yet on the wire (as failed) and closes the idle
  // connections; exchanges on the wire end on their own, then close.
  void stop();

 private:
  struct Conn;
  struct Call;
  void on_deadline(const std::shared_ptr<Call>& c);
  void start(const std::shared_ptr<Call>& c);
  void serve_parked();
  std::shared_ptr<Conn> take_idle(int64_t now);
  bool may_connect(int64_t now);
  void arm_connect_timer(int64_t now);
  void run(const std::shared_ptr<Call>& c, std::shared_ptr<Conn> conn);
  void send(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn);
  void on_answer(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn);
  void on_error(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn, const char* what,
                const boost::system::error_code& ec);
  void end_exchange(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn, bool reusable);
  void connection_failed(int64_t now);
  void finish(const std::shared_ptr<Call>& c, CallResult r);
  int retry_hint(int64_t now);
  void pump();

  boost::asio::io_context& ctx_;
  std::string url_text_;
  HookTarget target_;
  PoolStats* stats_;
  std::vector<std::shared_ptr<Conn>> idle_;    // kept-alive, most recently used last
  std::deque<std::shared_ptr<Call>> queue_;    // waiting for a slot; may hold finished calls
  std::deque<std::shared_ptr<Call>> parked_;   // in a slot, waiting for a connection; ditto
  size_t slots_ = 0;       // parked calls + exchanges on the wire (their call ended or not)
  size_t waiting_ = 0;     // calls in queue_ not yet finished
  size_t max_inflight_ = 64;                   // the latest call's limit
  size_t open_ = 0;        // connections open: connecting, busy or idle
  size_t connecting_ = 0;
  double tokens_ = kConnectBurst;
  int64_t tokens_at_ms_ = 0;
  uint32_t failures_ = 0;          // connections in a row that failed before an answer
  int64_t next_connect_ms_ = 0;    // the pause after them
  double hold_ms_ = -1;            // moving mean of an answered exchange's slot time
  boost::asio::steady_timer connect_timer_;
  bool connect_timer_armed_ = false;
  bool stopped_ = false;
};

}  // namespace parley::hooks
