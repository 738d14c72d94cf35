// A test client speaking PROTOCOL.md over WebSocket or raw TCP / Unix framing.
// One io thread owns the stream (reads and writes); server arrays (tick batches) are split
// into their objects, kept in arrival order for next()/expect().
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace parley::testing {

using namespace std::chrono_literals;

// Field access on one JSON object (minified text), for assertions.
std::optional<std::string> json_str(const std::string& obj, const char* key);
std::optional<int64_t> json_int(const std::string& obj, const char* key);
std::optional<bool> json_bool(const std::string& obj, const char* key);
// The field's raw minified JSON ("{...}", "[...]", "1", "\"x\"").
std::optional<std::string> json_raw(const std::string& obj, const char* key);
std::string op_of(const std::string& obj);
// obj without the server's clock (PROTOCOL.md "Time for games"): its "tick" and
// "ts" fields taken out, so that a frame can be compared whole. Empty when nullopt.
std::string without_server_time(const std::optional<std::string>& obj);
// The items of a JSON array (minified), in order; empty when `json` is not an array.
std::vector<std::string> json_array_items(const std::string& json);
// The objects of one server frame: the object itself, or each object of a tick
// batch array; {"!invalid-json:<frame>"} when the frame does not parse.
std::vector<std::string> json_frame_objects(const std::string& frame);
// The seq of each message in obj's "msgs" array (a history reply), in order.
std::vector<int64_t> msg_seqs(const std::string& obj);
// first, first + 1, ..., last (what msg_seqs should be).
std::vector<int64_t> seq_range(int64_t first, int64_t last);

// Client frames of PROTOCOL.md ("Client ops"); optional fields are left out when unset.
std::string hello_frame(const std::string& token, int rid = 1, int v = 1);
std::string join_frame(const std::string& ch, std::optional<uint64_t> since = std::nullopt,
                       std::optional<int64_t> rid = std::nullopt);
// `body` is raw JSON.
std::string pub_frame(const std::string& ch, const std::string& id, const std::string& body,
                      std::optional<int64_t> rid = std::nullopt);

enum class Wire { kWebSocket, kTcp, kUnix };

class Client {
 public:
  // Connects (and for WebSocket, handshakes at /v1/ws). Asserts on failure.
  static std::unique_ptr<Client> connect(uint16_t port, Wire wire = Wire::kWebSocket,
                                         const std::string& origin = "",
                                         const std::string& unix_path = "");
  ~Client();

  void send(const std::string& json);
  // Sends raw bytes on the socket (RFC 6455 tests: hand-made frames).
  void send_raw(const std::string& bytes);

  // The next server object, or nullopt on timeout or close.
  std::optional<std::string> next(std::chrono::milliseconds timeout = 5s);
  // The next object with this op (others before it are dropped); "" on timeout.
  std::string expect(const std::string& op, std::chrono::milliseconds timeout = 5s);
  // hello with a token; returns the welcome (or error) object.
  std::string hello(const std::string& token, int rid = 1);
  // join; returns the joined object.
  std::string join(const std::string& ch, std::optional<uint64_t> since = std::nullopt);

  // Waits until the server closes the connection; the close code (WebSocket) or 0.
  std::optional<int> wait_closed(std::chrono::milliseconds timeout = 5s);
  bool closed();
  // Server frames received so far (a tick batch counts once).
  size_t frames() const { return frames_.load(); }
  void close();

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  void push_frame(const std::string& frame);
  // io thread: the reads loop, the writes leave one at a time.
  void read_next();
  void write_next();
  // Any thread: queues bytes (raw: past the WebSocket framing) and waits until written.
  void write(std::string bytes, bool raw);
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> objects_;
  bool closed_ = false;
  int close_code_ = 0;
  std::atomic<size_t> frames_{0};
  std::thread reader_;
};

// Every object `c` receives before the msg with this id (which is consumed); a
// gtest failure when that msg does not come (5 s without an object).
std::vector<std::string> until_msg(Client& c, const std::string& id);
// The next ack or error `c` receives, what comes before it skipped ("" when
// nothing comes for `timeout`).
std::string ack_or_error(Client& c, std::chrono::milliseconds timeout = 5s);

// Connects and says hello with `token`; EXPECTs (gtest) a welcome.
std::unique_ptr<Client> connect_with_token(uint16_t port, const std::string& token,
                                           Wire wire = Wire::kWebSocket);
// Connects and says hello as `user` of `tenant` (a ServerProcess::token); EXPECTs
// (gtest) a welcome for that tenant.
std::unique_ptr<Client> connect_as(uint16_t port, const std::string& user,
                                   const std::string& tenant = "demo",
                                   Wire wire = Wire::kWebSocket);

}  // namespace parley::testing
