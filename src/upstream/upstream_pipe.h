// One loop's queue of one namespace's upstream events and its keep-alive HTTP
// connection to the app server (Boost.Beast's client).
//
// Runs on one loop; every method is called there. The hub shard of a channel
// lives on one loop and every event of the channel is queued on that loop's
// pipe, so a pipe sending its queue strictly oldest first, one request at a
// time, and retrying a failed batch before anything newer keeps each channel
// in order. Events collected for up to tick_ms go out as one JSON array.
// The queue bound is the namespace's, shared by the loops; past it the oldest
// event not on the wire is dropped and counted. Clients never wait on a pipe:
// push() only appends.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "metrics/metrics.h"
#include "upstream/namespace_upstream.h"

namespace parley::upstream {

struct PipeOptions {
  uint32_t request_timeout_ms = 5000;   // connect, write and answer each
  size_t max_batch_events = 1000;
  size_t max_batch_bytes = 1 << 20;
  uint32_t backoff_min_ms = 100;        // first retry after 50-100 ms, doubling
  uint32_t backoff_max_ms = 10'000;
  size_t max_answer_bytes = 64 * 1024;  // the answer's body is read and ignored
};

class UpstreamPipe : public std::enable_shared_from_this<UpstreamPipe> {
 public:
  // `latency` is the pipe's loop's slot of parley_upstream_request_seconds.
  UpstreamPipe(boost::asio::io_context& ctx, NamespaceUpstream& ns, metrics::Histogram& latency,
               PipeOptions opts, uint64_t batch_id_base);

  // Queues one event (a JSON object). Never blocks.
  void push(std::string event_json);
  // Cancels timers and the connection; queued events are abandoned.
  void stop();
  size_t waiting() const { return events_.size(); }

 private:
  enum class Phase { kIdle, kTick, kSending, kBackoff };

  void schedule();
  void send();
  void connect();
  void write();
  void read();
  void on_answer(unsigned status, bool keep_alive);
  void on_failure(const char* what, const std::string& detail);
  void drop_oldest();
  void close_stream();

  boost::asio::io_context& ctx_;
  NamespaceUpstream& ns_;
  metrics::Histogram& latency_;
  PipeOptions opts_;
  std::deque<std::string> events_;
  size_t batch_ = 0;    // events (from the front) of the batch being sent or retried
  size_t on_wire_ = 0;  // of those, the ones in the request in flight: never dropped
  Phase phase_ = Phase::kIdle;
  unsigned attempt_ = 0;
  uint64_t batch_id_ = 0;
  bool reused_ = false;          // the request went out on a kept-alive connection
  bool resent_on_fresh_ = false; // the batch was already resent once for a stale connection
  bool stopped_ = false;
  int64_t started_ns_ = 0;
  int64_t last_answer_ms_ = 0;
  int64_t failing_since_ms_ = 0;
  int64_t last_warn_ms_ = 0;
  std::minstd_rand rng_;
  boost::asio::steady_timer timer_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buf_;
  boost::beast::http::request<boost::beast::http::string_body> req_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
};

}  // namespace parley::upstream
