// ClientCore: the connection state machine behind parley::Client, independent
// of the transport: hello / welcome, the request table (rid -> call), the
// outbox of calls waiting for a connection, drops, backoff, `bye`, liveness.
// Channels (ChannelCore) hold the per-channel resume logic and use the
// package-internal part below.
//
// Thread: the poll() thread; see parley/client.h.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "parley/client.h"
#include "state_streams.h"
#include "timers.h"

namespace parley::detail {

class ChannelCore;

/// One request op: sent with a fresh rid per attempt, resent after a drop
/// when `retry` (else failed with `disconnected`).
struct Call {
  Json frame;
  bool retry = true;
  bool settled = false;
  int attempts = 0;
  int64_t rid = 0;
  TimerId timer = 0;
  std::function<void(Json&)> on_reply;
  std::function<void(const Json&)> on_error;  ///< an error frame answering it
  std::function<void(const Error&)> fail;     ///< dropped (not retried) or closed
};

class ClientCore {
 public:
  explicit ClientCore(ClientOptions options);
  ~ClientCore();

  // ---- parley::Client ----
  void poll(std::chrono::milliseconds wait);
  void connect();
  void close();
  ClientState state() const { return state_; }
  const Welcome& welcome() const { return welcome_; }
  void set_token(std::string token) { options_.token = std::move(token); }
  ChannelCore& channel(const std::string& name);
  /// A request with retries and a timeout (request_timeout_ms unless given).
  void request(Json frame, bool retry, std::function<void(Result<Json>)> done, int64_t timeout_ms = -1);

  std::function<void(const Welcome&)> on_open;
  std::function<void(const Disconnect&)> on_disconnect;
  std::function<void(const Bye&)> on_bye;
  std::function<void(const Direct&)> on_direct;
  std::function<void(const Retry&)> on_retry;
  std::function<void(const Error&)> on_error;
  std::function<void()> on_closed;

  // ---- for ChannelCore ----
  const ClientOptions& options() const { return options_; }
  bool is_open() const { return state_ == ClientState::open; }
  bool is_closed() const { return state_ == ClientState::closed; }
  int64_t now() const { return options_.clock(); }
  double random() { return options_.random(); }
  std::string next_id();
  int64_t take_rid() { return next_rid_++; }
  /// An error frame's retry_ms (or 100) plus jitter.
  int64_t retry_delay(const Json& error_frame);
  /// A timer dropped when the client closes; `fn` runs from poll().
  TimerId later(int64_t ms, std::function<void()> fn);
  void cancel(TimerId id) { timers_.cancel(id); }
  /// Sends when open, else queues for the next connection.
  void submit(const std::shared_ptr<Call>& call);
  /// Sends a frame with no reply expected (state, up). False when not open.
  bool send_frame(const Json& frame);
  void emit_retry(Retry r);
  void emit_error(const Error& e);
  /// Runs an application callback: now when inside poll(), else at the start
  /// of the next poll(), so no callback runs inside an API call made from
  /// outside poll(). `f` must own what it captures.
  template <class F>
  void emit(F&& f) {
    if (in_poll_ > 0) f();
    else deferred_.emplace_back(std::forward<F>(f));
  }
  const std::string& user() const { return welcome_.user; }
  /// The channel is left or re-joined: its delta streams start over (full bodies follow).
  void forget_streams(const std::string& ch) { streams_.forget(ch); }
  /// A pong's `ts` for a ping sent at wall-clock t0 and answered at t1 (ms since the epoch).
  void clock_sample(int64_t t0, int64_t t1, const Json& pong);
  ClockEstimate clock() const;
  static int64_t wall_now();

 private:
  class Sink;
  void open_connection();
  void on_transport_open(uint64_t epoch);
  void on_transport_frame(uint64_t epoch, std::string_view bytes);
  void on_transport_closed(uint64_t epoch, int code, std::string_view reason);
  void dispatch(Json& obj);
  void on_state_delta(const Json& obj);
  void on_error_frame(const Json& obj);
  void on_welcome(const Json& obj);
  void send_hello(bool with_enc);
  void start_liveness(int64_t heartbeat_ms);
  void liveness_tick(uint64_t epoch, int64_t period);
  void abandon(int code, const std::string& reason);
  void on_drop(int code, const std::string& reason);
  int close_code_of(int code, std::string& reason) const;
  void schedule_reconnect(Disconnect info);
  void forget(const std::shared_ptr<Call>& call);

  ClientOptions options_;
  Timers timers_;
  ClientState state_ = ClientState::idle;
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<Connection> conn_;
  uint64_t epoch_ = 0;  // one per connection attempt: late events of an old one are ignored
  int attempt_ = 0;
  int auth_failures_ = 0;
  int64_t bye_reconnect_ms_ = -1;
  std::string hello_error_;
  std::string pending_token_;  // the token of the attempt under way
  std::string bye_code_;       // the last `bye` of this connection  // the code of an error answering our hello
  TimerId reconnect_timer_ = 0;
  TimerId connect_timer_ = 0;
  TimerId live_timer_ = 0;
  int64_t last_rx_ = 0;
  int64_t last_tx_ = 0;
  int64_t next_rid_ = 1;
  int64_t hello_rid_ = 0;
  std::unordered_map<int64_t, std::shared_ptr<Call>> pending_;
  std::deque<std::shared_ptr<Call>> outbox_;
  std::map<std::string, std::unique_ptr<ChannelCore>> channels_;
  std::string id_prefix_;
  uint64_t id_counter_ = 0;
  Welcome welcome_;
  int in_poll_ = 0;
  std::deque<std::function<void()>> deferred_;
  // The encoding frames travel in now: options_.codec from the start on a
  // WebSocket (its subprotocol), and on raw TCP / Unix JSON until a welcome
  // carrying the codec's `enc` (the hello and its answer are always JSON).
  const Codec* wire_ = nullptr;
  bool stream_ = false;        // raw TCP / Unix (tcp://, unix://): no subprotocols
  bool hello_enc_ = false;     // our hello of this connection asked for options_.codec's enc
  std::vector<Json> decoded_;  // reused across frames
  StateStreams streams_;       // this connection's state delta streams (sids)
  std::deque<ClockEstimate> clock_samples_;  // the last few pongs with ts, oldest first
  std::string encoded_;
};

}  // namespace parley::detail
