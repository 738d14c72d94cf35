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
// Thread: every member function runs on the connection's loop (post to it);
// queued() and in_flight() may be read from any thread (a scrape).
#pragma once

#include <hiredis/read.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/status.h"

struct redisReply;

namespace parley::store::valkey {

struct ReplyFree {
  void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
// A reply (an error reply too: the caller reads its text), or kUnavailable when
// the connection failed before the reply came.
using ReplyDone = std::function<void(Result<Reply>)>;

// RESP encoding of one command (hiredis's redisFormatCommandArgv).
std::string format_command(const std::vector<std::string>& args);

struct ConnectionOptions {
  uint32_t command_timeout_ms = 2000;
  size_t max_waiting = 100'000;          // commands queued + in flight; over: kUnavailable
  std::vector<std::string> hello;        // formatted commands sent first on each connect
};

class RespConnection : public std::enable_shared_from_this<RespConnection> {
 public:
  RespConnection(boost::asio::io_context& loop, HostPort addr, ConnectionOptions opts);
  ~RespConnection();

  // Queues a formatted command; `done` (may be empty) runs once, on this loop.
  void send(std::string command, ReplyDone done);
  // Sends the hello commands again (the node lost its scripts: NOSCRIPT).
  void send_hello();
  // Fails everything waiting and stays closed.
  void close();

  const HostPort& address() const { return addr_; }
  // Commands waiting to be written (while connecting, or behind a write).
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Commands written and not yet answered.
  size_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  // Whether the last attempt to reach the node failed (and no reply came since).
  bool down() const { return down_.load(std::memory_order_relaxed); }

 private:
  enum class State { kIdle, kConnecting, kReady, kBackoff, kClosed };
  struct Waiting {
    ReplyDone done;  // empty for hello commands
    int64_t since_ns;
    bool written;
  };

  void connect();
  void on_connected(uint64_t gen);
  void write_more();
  void read_more();
  void on_read(size_t n);
  void arm_watchdog();
  void fail(const std::string& why);
  void update_counts();

  boost::asio::io_context& loop_;
  HostPort addr_;
  ConnectionOptions opts_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer watchdog_;
  boost::asio::steady_timer reconnect_;
  bool watchdog_armed_ = false;
  State state_ = State::kIdle;
  uint64_t gen_ = 0;          // bumped by each fail(): stale completions ignore themselves
  int64_t backoff_until_ns_ = 0;
  int64_t backoff_ns_ = 0;
  int64_t last_read_ns_ = 0;  // when the node last sent bytes (the watchdog's clock)
  redisReader* reader_ = nullptr;
  std::deque<Waiting> waiting_;  // oldest first: replies complete the front
  std::string out_;              // formatted commands not yet handed to a write
  size_t out_count_ = 0;         // how many commands out_ holds
  std::string writing_;          // the write in flight
  size_t writing_count_ = 0;
  std::array<char, 64 * 1024> buf_;
  std::atomic<size_t> queued_{0};
  std::atomic<size_t> in_flight_{0};
  std::atomic<bool> down_{false};
};

}  // namespace parley::store::valkey
