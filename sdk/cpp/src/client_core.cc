#include "client_core.h"

#include <algorithm>
#include <random>

#include "backoff.h"
#include "channel_core.h"
#include "fields.h"

namespace parley::detail {
namespace {

// Close codes after which reconnecting with the same credentials is pointless.
constexpr int kCloseUnauthorized = 4001;
constexpr int kCloseBadVersion = 4002;
// A drop the client decided on (timeout, dead peer); not a wire code.
constexpr int kCloseAbandoned = 4000;

std::string random_prefix(const std::function<double()>& random) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (int i = 0; i < 8; i++) s += kDigits[static_cast<int>(random() * 36) % 36];
  return s + "-";
}

Error error_from(const Json& obj) {
  Error e{str_or(obj, "code", "internal"), str_or(obj, "msg"), int_or(obj, "retry_ms", -1)};
  return e;
}

}  // namespace

// Forwards one connection's events, tagged with the attempt they belong to.
class ClientCore::Sink final : public ConnectionHandler {
 public:
  Sink(ClientCore& c, uint64_t epoch) : c_(c), epoch_(epoch) {}
  void on_open() override { c_.on_transport_open(epoch_); }
  void on_frame(std::string_view bytes) override { c_.on_transport_frame(epoch_, bytes); }
  void on_closed(int code, std::string_view reason) override {
    c_.on_transport_closed(epoch_, code, reason);
  }

 private:
  ClientCore& c_;
  uint64_t epoch_;
};

ClientCore::ClientCore(ClientOptions options) : options_(std::move(options)) {
  if (!options_.clock) {
    options_.clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  if (!options_.random) {
    auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
    options_.random = [gen] { return std::uniform_real_distribution<double>(0, 1)(*gen); };
  }
  if (!options_.codec) options_.codec = json_codec();
  wire_ = options_.codec.get();
  options_.max_in_flight = std::max(1, options_.max_in_flight);
  id_prefix_ = options_.id_prefix.empty() ? random_prefix(options_.random) : options_.id_prefix;
}

ClientCore::~ClientCore() {
  // No callbacks from a destructor: just let the connection go.
  state_ = ClientState::closed;
  if (conn_) conn_->close(1000, "client closed");
  conn_.reset();
  timers_.clear();
}

void ClientCore::poll(std::chrono::milliseconds wait) {
  int64_t wait_ms = wait.count();
  const int64_t due = timers_.next_due();
  if (due >= 0) wait_ms = std::min(wait_ms, std::max<int64_t>(0, due - now()));
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(in_poll_);
  // What API calls made outside poll() had to report.
  for (std::size_t n = deferred_.size(); n > 0 && !deferred_.empty(); --n) {
    auto fn = std::move(deferred_.front());
    deferred_.pop_front();
    fn();
  }
  if (!deferred_.empty()) wait_ms = 0;
  if (options_.transport) options_.transport->poll(std::chrono::milliseconds(std::max<int64_t>(0, wait_ms)));
  timers_.run_due(now());
}

void ClientCore::connect() {
  if (state_ == ClientState::idle) open_connection();
}

void ClientCore::close() {
  if (state_ == ClientState::closed) return;
  state_ = ClientState::closed;
  timers_.clear();
  reconnect_timer_ = connect_timer_ = live_timer_ = 0;
  epoch_++;
  if (conn_) conn_->close(1000, "client closed");
  conn_.reset();
  const Error err{"closed", "client is closed"};
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [rid, call] : pending) call->fail(err);
  auto outbox = std::move(outbox_);
  outbox_.clear();
  for (auto& call : outbox) call->fail(err);
  for (auto& [name, ch] : channels_) ch->on_client_closed(err);
  emit([this] {
    if (on_closed) on_closed();
  });
}

ChannelCore& ClientCore::channel(const std::string& name) {
  auto it = channels_.find(name);
  if (it == channels_.end()) it = channels_.emplace(name, std::make_unique<ChannelCore>(*this, name)).first;
  return *it->second;
}

void ClientCore::request(Json frame, bool retry, std::function<void(Result<Json>)> done,
                         int64_t timeout_ms) {
  auto call = std::make_shared<Call>();
  call->frame = std::move(frame);
  call->retry = retry;
  std::weak_ptr<Call> weak = call;
  auto finish = std::make_shared<std::function<void(Result<Json>)>>(std::move(done));
  call->on_reply = [this, weak, finish](Json& reply) {
    auto c = weak.lock();
    if (!c || c->settled) return;
    c->settled = true;
    cancel(c->timer);
    emit([finish, r = std::move(reply)]() mutable {
      if (*finish) (*finish)(std::move(r));
    });
  };
  call->on_error = [this, weak](const Json& err) {
    auto c = weak.lock();
    if (!c || c->settled) return;
    const std::string code = str_or(err, "code");
    if (c->retry && Error::is_retryable(code) && ++c->attempts < options_.max_retry_attempts) {
      emit_retry(Retry{str_or(c->frame, "op"), str_or(c->frame, "ch"), {}, code, int_or(err, "retry_ms", -1)});
      later(retry_delay(err), [this, c] {
        if (!c->settled) submit(c);
      });
      return;
    }
    c->fail(error_from(err));
  };
  call->fail = [this, weak, finish](const Error& e) {
    auto c = weak.lock();
    if (!c || c->settled) return;
    c->settled = true;
    cancel(c->timer);
    emit([finish, e] {
      if (*finish) (*finish)(e);
    });
  };
  if (timeout_ms < 0) timeout_ms = options_.request_timeout_ms;
  if (timeout_ms > 0) {
    call->timer = later(timeout_ms, [this, call, timeout_ms] {
      forget(call);
      call->fail(Error{"timeout", "no reply to " + str_or(call->frame, "op") + " within " +
                                      std::to_string(timeout_ms) + " ms"});
    });
  }
  submit(call);
}

std::string ClientCore::next_id() { return id_prefix_ + std::to_string(++id_counter_); }

int64_t ClientCore::retry_delay(const Json& error_frame) {
  int64_t base = int_or(error_frame, "retry_ms", 0);
  if (base <= 0) base = 100;
  return with_jitter(base, options_.retry_jitter, random());
}

TimerId ClientCore::later(int64_t ms, std::function<void()> fn) {
  return timers_.add(now() + std::max<int64_t>(0, ms), [this, fn = std::move(fn)] {
    if (state_ != ClientState::closed) fn();
  });
}

void ClientCore::submit(const std::shared_ptr<Call>& call) {
  if (state_ == ClientState::closed) {
    call->fail(Error{"closed", "client is closed"});
    return;
  }
  if (!is_open()) {
    outbox_.push_back(call);
    return;
  }
  call->rid = next_rid_++;
  pending_[call->rid] = call;
  Json frame = call->frame;
  frame["rid"] = call->rid;
  send_frame(frame);
}

bool ClientCore::send_frame(const Json& frame) {
  if (!conn_ || !is_open()) return false;
  if (!wire_->encode(frame, encoded_)) return false;
  conn_->send(std::move(encoded_), wire_->binary());
  encoded_.clear();
  last_tx_ = now();
  return true;
}

void ClientCore::emit_retry(Retry r) {
  emit([this, r = std::move(r)] {
    if (on_retry) on_retry(r);
  });
}

void ClientCore::emit_error(const Error& e) {
  emit([this, e] {
    if (on_error) on_error(e);
  });
}

// ---- connection lifecycle ----

void ClientCore::open_connection() {
  state_ = ClientState::connecting;
  const uint64_t epoch = ++epoch_;
  std::string token = options_.token_provider ? options_.token_provider() : options_.token;
  if (token.empty()) {
    emit_error(Error{"unauthorized", "no token to connect with"});
    if (epoch != epoch_ || state_ == ClientState::closed) return;
    schedule_reconnect(Disconnect{0, "no token", false, true, 0});
    return;
  }
  bye_reconnect_ms_ = -1;
  hello_rid_ = 0;
  hello_error_.clear();
  bye_code_.clear();
  if (!options_.transport) {
    emit_error(Error{"transport", "ClientOptions::transport is not set (make_default_transport())"});
    close();
    return;
  }
  sink_ = std::make_unique<Sink>(*this, epoch);
  pending_token_ = std::move(token);
  stream_ = options_.url.rfind("tcp://", 0) == 0 || options_.url.rfind("unix://", 0) == 0;
  wire_ = stream_ ? json_codec().get() : options_.codec.get();
  ConnectOptions connection = options_.connection;
  // PROTOCOL.md: a WebSocket picks its encoding by subprotocol; JSON needs none.
  if (!stream_ && connection.subprotocol.empty() && options_.codec->name() != "json") {
    connection.subprotocol = "parley.v1." + std::string(options_.codec->name());
  }
  conn_ = options_.transport->connect(options_.url, connection, *sink_);
  if (!conn_) {
    emit_error(Error{"transport", "the transport cannot connect to " + options_.url});
    if (epoch != epoch_ || state_ == ClientState::closed) return;
    schedule_reconnect(Disconnect{1006, "connect failed", false, true, 0});
    return;
  }
  cancel(connect_timer_);
  connect_timer_ = later(options_.connect_timeout_ms, [this, epoch] {
    if (epoch != epoch_ || state_ == ClientState::open) return;
    abandon(kCloseAbandoned, "connect timeout");
  });
}

void ClientCore::on_transport_open(uint64_t epoch) {
  if (epoch != epoch_ || state_ != ClientState::connecting) return;
  last_rx_ = now();
  send_hello(stream_ && options_.codec->name() != "json");
}

// On a WebSocket the hello travels in the subprotocol's encoding; on raw TCP /
// Unix it is JSON, asking for the codec's encoding with `enc`.
void ClientCore::send_hello(bool with_enc) {
  hello_rid_ = next_rid_++;
  hello_enc_ = with_enc;
  Json hello = {{"op", "hello"}, {"v", 1}, {"token", pending_token_}, {"rid", hello_rid_}};
  if (with_enc) hello["enc"] = std::string(options_.codec->name());
  // PROTOCOL.md "State deltas": asked for per connection; a server without it sends full bodies.
  if (options_.state_deltas) hello["caps"] = Json::array({"state_delta"});
  // hello goes out before the state is open, so send_frame's check does not apply.
  std::string bytes;
  if (!wire_->encode(hello, bytes)) return;
  conn_->send(std::move(bytes), wire_->binary());
  last_tx_ = now();
}

void ClientCore::on_transport_frame(uint64_t epoch, std::string_view bytes) {
  if (epoch != epoch_) return;
  last_rx_ = now();
  decoded_.clear();
  if (!wire_->decode(bytes, decoded_)) {
    emit_error(Error{"bad_frame", std::string("the server sent a frame that is not ") +
                                      (wire_->binary() ? "a MessagePack map or array of maps (PROTOCOL.md's mapping)"
                                                       : "a JSON object or array of objects")});
    return;
  }
  // A callback may close the client or drop this connection: the rest of the
  // batch belongs to a connection that is gone then.
  std::vector<Json> batch = std::move(decoded_);
  for (Json& obj : batch) {
    if (epoch != epoch_) break;
    dispatch(obj);
  }
  batch.clear();
  decoded_ = std::move(batch);
}

void ClientCore::on_transport_closed(uint64_t epoch, int code, std::string_view reason) {
  if (epoch != epoch_) return;
  on_drop(code, std::string(reason));
}

void ClientCore::dispatch(Json& obj) {
  const std::string* op = str_ptr(obj, "op");
  if (!op) return;
  if (*op == "sd") return on_state_delta(obj);
  if (*op == "state" && field(obj, "sid")) streams_.full(obj);  // before the channel moves its body out
  if (*op == "msg" || *op == "edit" || *op == "delete" || *op == "state" || *op == "presence" ||
      *op == "kicked") {
    const std::string* ch = str_ptr(obj, "ch");
    if (!ch) return;
    auto it = channels_.find(*ch);
    if (it == channels_.end()) return;
    if (*op == "kicked") it->second->on_kicked_frame(obj);
    else it->second->on_event(obj);
    return;
  }
  if (*op == "welcome") {
    if (hello_rid_ != 0 && rid_of(obj) == hello_rid_ && state_ == ClientState::connecting) on_welcome(obj);
    return;
  }
  if (*op == "direct") {
    emit([this, d = Direct{str_or(obj, "from"), take(obj, "body")}] {
      if (on_direct) on_direct(d);
    });
    return;
  }
  if (*op == "bye") {
    Bye b{str_or(obj, "code"), int_or(obj, "reconnect_ms", -1)};
    if (b.reconnect_ms >= 0) bye_reconnect_ms_ = b.reconnect_ms;
    bye_code_ = b.code;
    emit([this, b] {
      if (on_bye) on_bye(b);
    });
    return;
  }
  if (*op == "error") {
    on_error_frame(obj);
    return;
  }
  const int64_t rid = rid_of(obj);
  if (rid == 0) return;
  auto it = pending_.find(rid);
  if (it == pending_.end()) return;
  auto call = it->second;
  pending_.erase(it);
  call->on_reply(obj);
}

// PROTOCOL.md "State deltas": an `sd` becomes the full `state` it stands for.
// One that cannot be applied (no base: the client lost track; malformed) is
// dropped, never guessed at, and the channel joined again, which gives it full
// bodies; with an unknown sid (the frame does not say which channel), every
// joined channel. One sent before the server saw a leave (a stale stream of a
// channel not joined now) is dropped quietly.
void ClientCore::on_state_delta(const Json& obj) {
  StateStreams::Taken t = streams_.take(obj);
  if (t.kind == StateStreams::Taken::applied) {
    auto it = channels_.find(t.ch);
    if (it != channels_.end()) it->second->on_delta_state(std::move(t.state));
    return;
  }
  if (t.kind == StateStreams::Taken::stale) {
    auto it = channels_.find(t.ch);
    if (it == channels_.end() || !it->second->joined()) return;
  }
  emit_error(Error{"bad_frame", t.why});
  std::vector<ChannelCore*> chans;
  if (t.kind == StateStreams::Taken::unknown) {
    for (auto& [name, ch] : channels_) chans.push_back(ch.get());
  } else if (auto it = channels_.find(t.ch); it != channels_.end()) {
    chans.push_back(it->second.get());
  }
  for (ChannelCore* ch : chans) ch->resync();
}

int64_t ClientCore::wall_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ClientCore::clock_sample(int64_t t0, int64_t t1, const Json& pong) {
  int64_t ts = 0;
  if (!get_int(pong, "ts", ts) || t1 < t0) return;
  clock_samples_.push_back(ClockEstimate{true, ts - (t0 + t1) / 2, t1 - t0});
  if (clock_samples_.size() > 8) clock_samples_.pop_front();
}

ClockEstimate ClientCore::clock() const {
  ClockEstimate best;
  for (const auto& s : clock_samples_) {
    if (!best.valid || s.rtt < best.rtt) best = s;
  }
  return best;
}

void ClientCore::on_error_frame(const Json& obj) {
  const int64_t rid = rid_of(obj);
  if (rid != 0 && rid == hello_rid_ && state_ == ClientState::connecting) {
    // PROTOCOL.md: a TCP server that does not speak the `enc` asked for answers
    // bad_request and stays in JSON, unauthenticated: say hello again in JSON.
    if (hello_enc_ && str_or(obj, "code") == "bad_request" && conn_) {
      emit_error(Error{"unsupported_enc", "the server does not take enc " + std::string(options_.codec->name()) +
                                              " (" + str_or(obj, "msg") + "): continuing in JSON"});
      send_hello(false);
      return;
    }
    // The close that follows decides; remember why (raw TCP has no close codes).
    hello_error_ = str_or(obj, "code");
    emit_error(error_from(obj));
    return;
  }
  if (rid != 0) {
    auto it = pending_.find(rid);
    if (it != pending_.end()) {
      auto call = it->second;
      pending_.erase(it);
      call->on_error(obj);
      return;
    }
    for (auto& [name, ch] : channels_) {
      if (ch->on_fire_and_forget_error(obj)) return;
    }
  }
  emit_error(error_from(obj));
}

void ClientCore::on_welcome(const Json& obj) {
  cancel(connect_timer_);
  state_ = ClientState::open;
  // Raw TCP / Unix: everything after a welcome carrying our `enc` is in it.
  if (stream_ && hello_enc_ && str_or(obj, "enc") == options_.codec->name()) wire_ = options_.codec.get();
  welcome_ = Welcome{str_or(obj, "conn"), str_or(obj, "user"), str_or(obj, "tenant"),
                     int_or(obj, "heartbeat_ms", 0), std::string(wire_->name())};
  // A welcome without `caps` (an older server) grants nothing: full bodies.
  welcome_.caps = strings(obj, "caps");
  welcome_.state_deltas = std::find(welcome_.caps.begin(), welcome_.caps.end(), "state_delta") != welcome_.caps.end();
  streams_.clear();  // sids are the old connection's
  clock_samples_.clear();
  attempt_ = 0;
  auth_failures_ = 0;
  const uint64_t epoch = epoch_;
  start_liveness(welcome_.heartbeat_ms);
  emit([this, w = welcome_] {
    if (on_open) on_open(w);
  });
  if (epoch != epoch_) return;
  // Joins first: a channel's publishes wait for its `joined`.
  for (auto& [name, ch] : channels_) {
    ch->on_open();
    if (epoch != epoch_) return;
  }
  auto queued = std::move(outbox_);
  outbox_.clear();
  for (auto& call : queued) submit(call);
}

// The server pings WebSocket clients itself; this catches what the socket
// layer never notices (a laptop that slept, a NAT that forgot the flow):
// after a quiet period, ask; after two plus up to one more (at most 5 s) of
// slack, drop. Raw TCP has no
// pings, and the server closes a TCP client silent for two periods, so a
// ping also goes out when the client itself has sent nothing for half a period.
void ClientCore::start_liveness(int64_t heartbeat_ms) {
  cancel(live_timer_);
  int64_t period = options_.heartbeat_ms > 0 ? options_.heartbeat_ms : heartbeat_ms;
  if (period <= 0) period = 25000;
  const uint64_t epoch = epoch_;
  live_timer_ = later(std::max<int64_t>(100, period / 2), [this, epoch, period] { liveness_tick(epoch, period); });
}

void ClientCore::liveness_tick(uint64_t epoch, int64_t period) {
  if (epoch != epoch_ || !is_open()) return;
  const int64_t t = now();
  if (t - last_rx_ > 2 * period + std::min<int64_t>(period, 5000)) {
    return abandon(kCloseAbandoned, "no traffic from the server");
  }
  if (t - last_rx_ > period || t - last_tx_ >= period / 2) send_frame({{"op", "ping"}, {"rid", take_rid()}});
  live_timer_ = later(std::max<int64_t>(100, period / 2), [this, epoch, period] { liveness_tick(epoch, period); });
}

void ClientCore::abandon(int code, const std::string& reason) {
  epoch_++;
  if (conn_) conn_->close(1000, reason);
  conn_.reset();
  on_drop(code, reason);
}

// Raw TCP has no close codes (PROTOCOL.md "Transports"), and a WebSocket
// close frame can be lost with its socket: then the frame that came before
// the close says why, and the drop carries the code the server closes a
// WebSocket with for it, so an application sees one code on every transport.
int ClientCore::close_code_of(int code, std::string& reason) const {
  if (code != 1006 && code != 1005) return code;
  const std::string& why = !hello_error_.empty() ? hello_error_ : bye_code_;
  int mapped = 0;
  if (why == "unauthorized" || why == "tenant_removed") mapped = kCloseUnauthorized;
  else if (why == "bad_request" && !hello_error_.empty()) mapped = kCloseBadVersion;
  else if (why == "quota_exceeded" && !hello_error_.empty()) mapped = 4008;
  else if (why == "slow_consumer") mapped = 4010;
  else if (why == "draining") mapped = 1001;
  if (mapped == 0) return code;
  reason = why;
  return mapped;
}

void ClientCore::on_drop(int wire_code, const std::string& wire_reason) {
  if (state_ == ClientState::closed) return;
  std::string reason = wire_reason;
  const int code = close_code_of(wire_code, reason);
  epoch_++;
  conn_.reset();  // the transport is done with it (on_closed) or we are (abandon)
  cancel(connect_timer_);
  cancel(live_timer_);
  const bool was_open = state_ == ClientState::open;
  // What was in flight goes back to the outbox (to be resent) or fails.
  const Error dropped{"disconnected", "connection closed (" + std::to_string(code) + ")"};
  auto pending = std::move(pending_);
  pending_.clear();
  std::vector<std::shared_ptr<Call>> failed;
  for (auto& [rid, call] : pending) {
    if (call->retry) outbox_.push_back(call);
    else failed.push_back(call);
  }
  std::sort(outbox_.begin(), outbox_.end(), [](const auto& a, const auto& b) {
    return (a->rid == 0 ? INT64_MAX : a->rid) < (b->rid == 0 ? INT64_MAX : b->rid);
  });
  const uint64_t epoch = epoch_;
  for (auto& call : failed) call->fail(dropped);
  if (epoch != epoch_ || state_ == ClientState::closed) return;
  streams_.clear();
  for (auto& [name, ch] : channels_) ch->on_drop();

  std::string fatal;
  if (code == kCloseBadVersion) fatal = "bad_request";
  if (code == kCloseUnauthorized) {
    // A provider may mint a fresh token; a fixed token will not change.
    auth_failures_++;
    if (!options_.token_provider || auth_failures_ >= 3) fatal = "unauthorized";
  }
  hello_error_.clear();
  if (!fatal.empty() || !options_.reconnect.enabled) {
    emit([this, d = Disconnect{code, reason, was_open, false, 0}] {
      if (on_disconnect) on_disconnect(d);
    });
    if (!fatal.empty()) emit_error(Error{fatal, "connection closed (" + std::to_string(code) + " " + reason + ")"});
    close();
    return;
  }
  schedule_reconnect(Disconnect{code, reason, was_open, true, 0});
}

void ClientCore::schedule_reconnect(Disconnect info) {
  if (state_ == ClientState::closed) return;
  state_ = ClientState::waiting;
  const auto& rp = options_.reconnect;
  const int64_t delay = bye_reconnect_ms_ > 0 ? with_jitter(bye_reconnect_ms_, 0.5, random())
                                              : backoff_delay(attempt_++, rp.min_ms, rp.max_ms, rp.factor, random());
  bye_reconnect_ms_ = -1;
  info.will_reconnect = true;
  info.delay_ms = delay;
  cancel(reconnect_timer_);
  reconnect_timer_ = later(delay, [this] {
    if (state_ == ClientState::waiting) open_connection();
  });
  emit([this, info] {
    if (on_disconnect) on_disconnect(info);
  });
}

void ClientCore::forget(const std::shared_ptr<Call>& call) {
  if (call->rid != 0) {
    auto it = pending_.find(call->rid);
    if (it != pending_.end() && it->second == call) pending_.erase(it);
  }
  outbox_.erase(std::remove(outbox_.begin(), outbox_.end(), call), outbox_.end());
}

}  // namespace parley::detail
