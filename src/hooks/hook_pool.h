// One loop's keep-alive HTTP connections to one hook's URL, the calls in
// flight on them and the calls waiting for a slot (Boost.Beast's client).
//
// Runs on one loop; every method is called there, and every completion runs
// there. At most `max_inflight` calls are on the wire; up to `queue` more wait
// in order; past that a call is refused as full. Each call has one deadline,
// from call() on, waiting included: when it passes the call completes as a
// timeout and its connection, if it had one, is closed (an answer arriving
// later is never read). A call is sent once; only when a kept-alive
// connection turns out closed by the app server before any answer (HTTP
// servers close idle ones) does it go again, once, on a new connection.
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
};

struct CallLimits {
  uint32_t timeout_ms = 200;
  uint32_t max_inflight = 64;
  uint32_t queue = 256;
};

class HookPool : public std::enable_shared_from_this<HookPool> {
 public:
  // Largest answer body read; a longer one fails the call.
  static constexpr size_t kMaxAnswerBytes = 1 << 20;

  HookPool(boost::asio::io_context& ctx, std::string url_text, HookTarget target);

  const std::string& url_text() const { return url_text_; }
  size_t inflight() const { return inflight_; }
  size_t waiting() const { return waiting_; }

  // Sends `body` (JSON) with `api_key` as its Bearer. `done` runs once, on
  // this loop, never inside call().
  void call(std::string body, const std::string& api_key, const CallLimits& limits,
            std::function<void(CallResult)> done);
  // Ends every call (as failed) and closes the connections.
  void stop();

 private:
  struct Conn;
  struct Call;
  void start(const std::shared_ptr<Call>& c);
  void run(const std::shared_ptr<Call>& c, std::shared_ptr<Conn> conn);
  void on_error(const std::shared_ptr<Call>& c, const std::shared_ptr<Conn>& conn, const char* what,
                const boost::system::error_code& ec);
  void finish(const std::shared_ptr<Call>& c, CallResult r);
  void pump();

  boost::asio::io_context& ctx_;
  std::string url_text_;
  HookTarget target_;
  std::vector<std::shared_ptr<Conn>> idle_;  // kept-alive, most recently used last
  std::deque<std::shared_ptr<Call>> queue_;  // may hold calls already timed out
  size_t inflight_ = 0;
  size_t waiting_ = 0;                       // calls in queue_ not yet finished
  size_t max_inflight_ = 64;                 // the latest call's limit
  bool stopped_ = false;
};

}  // namespace parley::hooks
