// What the client needs of a network: open a connection to a URL, send whole
// frames, close, and report open / frame / closed. Small on purpose, so that
// Unreal's WebSockets module (IWebSocket: Connect, Send, Close, OnConnected,
// OnMessage, OnClosed, OnConnectionError) or a console's socket layer can
// implement it in a page of code. The default implementation is
// make_default_transport() (parley/default_transport.h): WebSocket and raw
// TCP on Boost.Beast / Asio.
//
// Threading contract (what an implementation must guarantee):
// - ConnectionHandler methods run on the thread that calls Client::poll(),
//   either from inside Transport::poll() or, for an engine that ticks its own
//   sockets on the game thread, from that tick; never concurrently.
// - Never from inside connect(), send() or close(): report even an immediate
//   failure later, from poll().
// - After close() or destruction of a Connection, its handler is not called again.
// - on_closed is called at most once per connection, after which it is dead.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace parley {

/// Receives one connection's events. Implemented by the client.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  /// The connection is ready for frames (WebSocket handshake done / TCP connected).
  virtual void on_open() = 0;
  /// One whole frame (a WebSocket message, or a length-prefixed TCP payload).
  virtual void on_frame(std::string_view bytes) = 0;
  /// The connection ended or could not be made. `code`: the WebSocket close
  /// code when the peer sent one, else 1006 (abnormal closure).
  virtual void on_closed(int code, std::string_view reason) = 0;
};

/// One connection attempt and, once open, the connection.
class Connection {
 public:
  virtual ~Connection() = default;
  /// Queues one frame (the transport adds its framing). `binary` picks a
  /// binary WebSocket message over a text one.
  virtual void send(std::string frame, bool binary) = 0;
  /// Starts a clean close; no handler calls follow.
  virtual void close(int code, std::string_view reason) = 0;
};

struct ConnectOptions {
  /// WebSocket subprotocol to offer (empty: none).
  std::string subprotocol;
  /// Largest frame accepted from the server; a larger one ends the connection.
  std::size_t max_frame_bytes = 64u << 20;
  /// Bytes queued for sending beyond which the connection is ended.
  std::size_t max_send_queue_bytes = 16u << 20;
};

class Transport {
 public:
  virtual ~Transport() = default;
  /// Starts connecting to `url` (ws://host:port/path, wss://…, tcp://host:port, or
  /// whatever scheme the implementation knows). Returns null only when the
  /// transport cannot even try; an unknown scheme or a refused connection is
  /// reported through handler.on_closed from poll().
  virtual std::unique_ptr<Connection> connect(const std::string& url, const ConnectOptions& options,
                                              ConnectionHandler& handler) = 0;
  /// Runs ready network work and delivers its events; waits up to `wait` for
  /// some when there is none (0: never blocks). An engine whose sockets tick
  /// elsewhere implements this as a no-op.
  virtual void poll(std::chrono::milliseconds wait) = 0;
};

}  // namespace parley
