// parley::Client: one logical connection to a Parley server (PROTOCOL.md),
// kept useful across drops: it says hello, rejoins every channel the
// application joined with `since` = the last seq it delivered, repairs gaps
// from history, resends what was in flight (publishes keep their client ids,
// so the server's dedupe makes a resend harmless) and reconnects with
// exponential backoff and equal jitter, or after a `bye` with at least its
// `reconnect_ms`.
//
// Thread: a Client and its Channels belong to the thread that calls poll()
// (a game loop's thread). Every callback runs inside poll(), on that thread;
// none runs inside another API call, so a callback may call any method of
// the client (including close()) but must not destroy it. Nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "parley/channel.h"
#include "parley/codec.h"
#include "parley/error.h"
#include "parley/events.h"
#include "parley/json.h"
#include "parley/transport.h"
#include "parley/version.h"

namespace parley {

namespace detail {
class ClientCore;
}

struct ReconnectPolicy {
  bool enabled = true;   ///< false: a drop closes the client for good
  int64_t min_ms = 250;  ///< first delay; grows by `factor` per failed attempt
  int64_t max_ms = 15000;
  double factor = 2;
};

struct ClientOptions {
  /// ws://host:port/v1/ws, wss://host:port/v1/ws or tcp://host:port (default transport).
  std::string url;
  /// A client JWT (PROTOCOL.md "Connecting"), used when token_provider is empty.
  std::string token;
  /// Called before every (re)connect, on the poll() thread, so a fresh token
  /// can be handed out; must return at once (fetch ahead of time). An empty
  /// string counts as a failed attempt. With a provider, close 4001 is retried
  /// (three times) instead of being final.
  std::function<std::string()> token_provider;

  ReconnectPolicy reconnect;
  int64_t connect_timeout_ms = 15000;  ///< connect to welcome; past it the attempt failed
  int64_t request_timeout_ms = 30000;  ///< history / leave / ping replies (0: none)
  int64_t publish_timeout_ms = 60000;  ///< a publish unacknowledged this long fails with `timeout` (0: never)
  /// Unacknowledged publishes per channel. With 1 a channel's publishes are
  /// sequenced in call order even across retries.
  int max_in_flight = 1;
  int64_t state_min_interval_ms = 0;   ///< minimum gap between two `state`s of one key
  double retry_jitter = 0.25;          ///< a server's retry_ms is stretched by up to this fraction
  int max_retry_attempts = 50;         ///< per request / publish on retryable errors
  /// Liveness period; 0: the welcome's heartbeat_ms. After a quiet period the
  /// client pings; after two plus min(period, 5 s) it drops the connection.
  int64_t heartbeat_ms = 0;
  std::size_t max_queued_publishes = 100000;  ///< per channel; beyond: `queue_full`
  /// Per channel: messages newer than a hole held while history fills it.
  /// Over it the newest held is dropped and read from history once the hole
  /// is filled (never reported as a gap while history still has it).
  std::size_t max_repair_buffer = 10000;
  std::string id_prefix;  ///< prefix of generated publish ids; default 8 random chars and '-'

  /// Required: make_default_transport() (parley/default_transport.h, in
  /// ParleyClient::ParleyClient) or an engine's own implementation. Without
  /// one, connecting fails with `transport` and the client closes.
  std::shared_ptr<Transport> transport;
  /// Default: json_codec().
  std::shared_ptr<const Codec> codec;
  /// Ask for state deltas (PROTOCOL.md "State deltas", hello caps
  /// ["state_delta"]): in a namespace with `state_delta = true` the server
  /// sends only changed top-level fields, which the client applies, so
  /// on_state still gets full bodies. An `sd` it cannot apply is dropped,
  /// reported (on_error `bad_frame`) and the channel re-joined with `since`.
  bool state_deltas = false;
  /// Limits handed to the transport.
  ConnectOptions connection;
  /// Milliseconds of a monotonic clock (tests); default std::chrono::steady_clock.
  std::function<int64_t()> clock;
  /// Uniform in [0, 1) (tests); default a seeded std::mt19937_64.
  std::function<double()> random;
};

enum class ClientState { idle, connecting, open, waiting, closed };

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Runs network work, timers and callbacks; waits up to `wait` when there
  /// is nothing to do (0: returns at once, for a game loop's frame).
  void poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0));

  /// Starts connecting (joining a channel does it too). on_open reports the welcome.
  void connect();
  /// Closes for good: pending operations fail with `closed`, on_closed follows.
  void close();

  ClientState state() const;
  /// The last welcome (empty fields before the first).
  const Welcome& welcome() const;
  /// Replaces the token of later connects (when there is no provider).
  void set_token(std::string token);

  /// The channel `name`, created on first use (not joined until join()). The
  /// handle stays valid as long as the client.
  Channel channel(const std::string& name);

  /// Round trip of a `ping`, in ms; its pong's `ts` feeds clock().
  void ping(std::function<void(const Result<int64_t>&)> done);
  /// The server clock estimate (the offset of the ping with the smallest rtt of the last 8).
  ClockEstimate clock() const;
  /// The server's time now (ms since the epoch) as estimated; -1 without an estimate.
  int64_t server_now() const;
  /// Sends any request op and hands over its reply (escape hatch for ops the
  /// SDK has no method for). Queued while disconnected, resent after a drop
  /// and after a retryable error.
  void request(Json frame, std::function<void(const Result<Json>&)> done);

  // Events; one handler each (setting one replaces the previous).
  void on_open(std::function<void(const Welcome&)> fn);
  void on_disconnect(std::function<void(const Disconnect&)> fn);
  void on_bye(std::function<void(const Bye&)> fn);
  void on_direct(std::function<void(const Direct&)> fn);
  void on_retry(std::function<void(const Retry&)> fn);
  /// Errors not tied to a call or a channel (a refused hello, a bad frame).
  void on_error(std::function<void(const Error&)> fn);
  void on_closed(std::function<void()> fn);

 private:
  std::unique_ptr<detail::ClientCore> core_;
};

}  // namespace parley
