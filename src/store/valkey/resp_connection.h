// One pipelined RESP connection to one Valkey/Redis node, on one event loop.
//
// Commands are written back to back without waiting for replies (pipelining);
// hiredis's redisReader parses what the socket returns and each reply completes
// the oldest command still waiting (RESP answers in order). Nothing here ever
// blocks: connecting, writing and reading are Asio operations on the loop.
//
// Faults: a connect failure, a read or write error, EOF, a protocol error or a
// node silent for command_timeout_ms while a command waits (a hung server: no
// byte since that command was sent) closes the socket and
// fails every waiting command with kUnavailable. The connection then refuses
// commands (kUnavailable, at once) for a backoff that grows from 50 ms to 1 s, and
// connects again when it ends, traffic or not: service resumes by itself.
//
// Every connect first sends `hello` commands (the store's SCRIPT LOADs), so each
// command behind them finds the scripts loaded.
//
// The socket itself (connect, write, read, parse, reconnect after a backoff) is
// a RespSocket, shared with the Subscriber; this class matches replies to
// commands and watches for silence.
//
// Thread: every member function runs on the connection's loop (post to it);
// queued() and in_flight() may be read from any thread (a scrape).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/status.h"
#include "store/valkey/resp_socket.h"

namespace parley::store::valkey {
// A reply (an error reply too: the caller reads its text), or kUnavailable when
// the connection failed before the reply came.
using ReplyDone = std::function<void(Result<Reply>)>;

// RESP encoding of one command (hiredis's redisFormatCommandArgv).
std::string format_command(const std::vector<std::string>& args);

struct ConnectionOptions {
  uint32_t command_timeout_ms = 2000;
  size_t max_waiting = 100'000;          // commands queued + in flight; over: kUnavailable
  std::vector<std::string> hello;        // formatted commands sent first on each connect
  // A connection failed (connect, silence, EOF); runs on its loop, must not block.
  std::function<void()> on_failure;
};

class RespConnection : public std::enable_shared_from_this<RespConnection>, private RespSocket::Owner {
 public:
  RespConnection(boost::asio::io_context& loop, HostPort addr, ConnectionOptions opts);
  ~RespConnection();

  // Queues a formatted command; `done` (may be empty) runs once, on this loop.
  void send(std::string command, ReplyDone done);
  // `done` runs with the answer to the next `barrier` command this connection
  // sends: one per loop turn, queued (posted to this loop) behind every command
  // sent in that turn, for every caller that joined it. For WAIT, which covers
  // every write the connection sent before it, so that a pipeline of appends
  // waits for its replicas once, not once per append. Every caller of one
  // connection passes the same command.
  void join_barrier(const std::string& barrier, std::function<void(const Result<Reply>&)> done);
  // Sends the hello commands again (the node lost its scripts: NOSCRIPT).
  void send_hello();
  // Fails everything waiting and stays closed.
  void close();

  const HostPort& address() const { return sock_.address(); }
  // Commands waiting to be written (while connecting, or behind a write).
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Commands written and not yet answered.
  size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  // Whether the last attempt to reach the node failed (and no reply came since).
  bool down() const { return down_.load(std::memory_order_relaxed); }
  // Whether the node answered since the connection's last failure.
  bool up() const { return up_.load(std::memory_order_relaxed); }

 private:
  struct Waiting {
    ReplyDone done;  // empty for hello commands
    int64_t since_ns;
  };

  void on_socket_ready() override;
  void on_socket_reply(Reply r) override;
  void on_socket_failed(const std::string& why, Was was) override;
  void on_socket_writing() override;
  std::shared_ptr<void> keepalive() override { return shared_from_this(); }
  void arm_watchdog();
  void update_counts();

  ConnectionOptions opts_;
  RespSocket sock_;
  boost::asio::steady_timer watchdog_;
  bool watchdog_armed_ = false;
  std::deque<Waiting> waiting_;  // oldest first: replies complete the front
  // Callers of the barrier not sent yet (join_barrier), and whether it is posted.
  std::vector<std::function<void(const Result<Reply>&)>> barrier_waiters_;
  bool barrier_posted_ = false;
  size_t out_count_ = 0;         // how many of them are not yet handed to a write
  std::atomic<size_t> queued_{0};
  std::atomic<size_t> in_flight_{0};
  std::atomic<bool> down_{false};
  std::atomic<bool> up_{false};
};

}  // namespace parley::store::valkey
