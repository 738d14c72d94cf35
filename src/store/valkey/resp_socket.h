// The socket part both kinds of Valkey connection share (RespConnection: replies
// matched to commands; Subscriber: pushes): one TCP connection to one node on one
// loop, connected asynchronously, written back to back (one write in flight, the
// rest buffered), read into hiredis's redisReader, each parsed reply handed to the
// owner in order. A failure (connect, read, write, EOF, protocol error, or the
// owner's fail()) closes the socket, tells the owner, and after a backoff that
// grows from 50 ms to 1 s (reset by any reply) asks the owner whether to connect
// again. Every completion is guarded by a generation number, so nothing of an
// old connection reaches the owner after a failure.
//
// Owned by value by its owner, which outlives it and is held by a shared_ptr:
// each pending operation keeps the owner alive (Owner::keepalive).
//
// Thread: every member function runs on the socket's loop.
#pragma once

#include <hiredis/read.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/host_port.h"

struct redisReply;

namespace parley::store::valkey {

struct ReplyFree {
  void operator()(redisReply* r) const;
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

class RespSocket {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Connected: what the owner sends now goes before anything buffered.
    virtual void on_socket_ready() = 0;
    // One reply (or push), in the order the node sent them.
    virtual void on_socket_reply(Reply r) = 0;
    // The connection is gone (socket closed, buffers dropped); `why` for the log,
    // `was` the state it failed in (a failure while in backoff is not news).
    enum class Was { kIdle, kConnecting, kReady, kBackoff, kClosed };
    virtual void on_socket_failed(const std::string& why, Was was) = 0;
    // Everything sent so far has been handed to a write.
    virtual void on_socket_writing() {}
    // The backoff after a failure ended: connect again (true) or stay idle.
    virtual bool on_socket_retry() { return true; }
    // The owner's own shared_ptr: held by every pending operation.
    virtual std::shared_ptr<void> keepalive() = 0;
  };
  using State = Owner::Was;

  RespSocket(boost::asio::io_context& loop, HostPort addr, Owner& owner);
  ~RespSocket();
  RespSocket(const RespSocket&) = delete;
  RespSocket& operator=(const RespSocket&) = delete;

  // From kIdle (or kBackoff, cutting it short): connects.
  void connect();
  // Queues bytes (formatted commands): written once connected, in order; `first`
  // puts them before everything buffered and not yet being written.
  void send(std::string_view bytes, bool first = false);
  // Closes the connection as a failure (the owner hears on_socket_failed).
  void fail(const std::string& why);
  // Closes for good: the owner hears on_socket_failed("closed"), no reconnect.
  void close();

  State state() const { return state_; }
  const HostPort& address() const { return addr_; }
  // While kBackoff: when it ends.
  int64_t backoff_until_ns() const { return backoff_until_ns_; }
  // When the node last sent bytes, and whether some are waiting to be read (a
  // stalled process, not a silent node): the owner's watchdog reads them.
  int64_t last_read_ns() const { return last_read_ns_; }
  bool unread() const;

 private:
  void on_connected();
  void write_more();
  void read_more();
  void on_read(size_t n);

  boost::asio::io_context& loop_;
  HostPort addr_;
  Owner& owner_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer reconnect_;
  State state_ = State::kIdle;
  uint64_t gen_ = 0;  // bumped by each failure: stale completions ignore themselves
  int64_t backoff_ns_ = 0;
  int64_t backoff_until_ns_ = 0;
  int64_t last_read_ns_ = 0;
  redisReader* reader_ = nullptr;
  std::string out_;      // bytes not yet handed to a write
  std::string writing_;  // the write in flight
  std::array<char, 64 * 1024> buf_;
};

}  // namespace parley::store::valkey
