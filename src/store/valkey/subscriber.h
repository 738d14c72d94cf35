// One connection to one Valkey/Redis node in subscribed mode: SSUBSCRIBE to the
// partitions' feed channels (sharded pub/sub), the committed messages the append
// script publishes come back as pushes (docs/architecture.md "Cross-node fan-out").
//
// Pushes carry no reply to wait for, so this is not a RespConnection: it keeps
// the set of channels it should hold, sends SSUBSCRIBE for each on every
// (re)connect, and reports each confirmation (`subscribed`: anything published
// before it may have been missed, the caller reads the store) and each channel
// the node takes away (`lost`: a forced sunsubscribe after its slot moved, or a
// MOVED answer; the caller re-routes it). A dropped connection reconnects after a
// backoff (50 ms doubling to 1 s) by itself.
//
// Thread: every member function runs on the subscriber's loop (post to it).
#pragma once

#include <hiredis/read.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "common/host_port.h"

namespace parley::store::valkey {

class Subscriber : public std::enable_shared_from_this<Subscriber> {
 public:
  struct Handlers {
    std::function<void(const std::string& channel, std::string payload)> message;
    std::function<void(const std::string& channel)> subscribed;
    std::function<void(const std::string& channel)> lost;
  };
  Subscriber(boost::asio::io_context& loop, HostPort addr, Handlers handlers);
  ~Subscriber();

  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);
  // Drops a channel without telling the node (it already dropped it).
  void forget(const std::string& channel) { wanted_.erase(channel); }
  void close();
  const HostPort& address() const { return addr_; }

  // Bytes a push may hold; a longer one closes the connection (a message body
  // is at most 4 x max_message_bytes, far below).
  static constexpr size_t kMaxPush = 16 << 20;

 private:
  enum class State { kIdle, kConnecting, kReady, kBackoff, kClosed };
  void connect();
  void on_connected(uint64_t gen);
  void send(std::string cmd);
  void write_more();
  void read_more();
  void on_read(size_t n);
  void fail(const std::string& why);

  boost::asio::io_context& loop_;
  HostPort addr_;
  Handlers handlers_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer reconnect_;
  State state_ = State::kIdle;
  uint64_t gen_ = 0;
  int64_t backoff_ns_ = 0;
  redisReader* reader_ = nullptr;
  std::set<std::string> wanted_;
  std::string out_;
  std::string writing_;
  std::array<char, 64 * 1024> buf_;
};

}  // namespace parley::store::valkey
