// One connection to one Valkey/Redis node in subscribed mode: SSUBSCRIBE to the
// partitions' feed channels (sharded pub/sub), the committed messages the append
// script publishes come back as pushes (docs/architecture.md "Cross-node fan-out").
//
// Pushes carry no reply to wait for, so this is not a RespConnection, but it
// sits on the same RespSocket (connect, write, read, parse, reconnect after a
// backoff of 50 ms doubling to 1 s). It keeps the set of channels it should
// hold, sends SSUBSCRIBE for each on every (re)connect, and reports each confirmation (`subscribed`: anything published
// before it may have been missed, the caller reads the store) and each channel
// the node takes away (`lost`: a forced sunsubscribe after its slot moved, or a
// MOVED answer; the caller re-routes it). A dropped connection reconnects by
// itself while any channel is wanted.
//
// Thread: every member function runs on the subscriber's loop (post to it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "common/host_port.h"
#include "store/valkey/resp_socket.h"

namespace parley::cluster {

class Subscriber : public std::enable_shared_from_this<Subscriber>, private store::valkey::RespSocket::Owner {
 public:
  struct Handlers {
    std::function<void(const std::string& channel, std::string payload)> message;
    std::function<void(const std::string& channel)> subscribed;
    std::function<void(const std::string& channel)> lost;
    // The connection failed (a node gone or silent): the map may be stale.
    std::function<void()> failed;
  };
  Subscriber(boost::asio::io_context& loop, HostPort addr, Handlers handlers);
  ~Subscriber();

  void subscribe(const std::string& channel);
  void unsubscribe(const std::string& channel);
  // Drops a channel without telling the node (it already dropped it).
  void forget(const std::string& channel) { wanted_.erase(channel); }
  void close();
  const HostPort& address() const { return sock_.address(); }

  // Bytes a push may hold; a longer one closes the connection (a message body
  // is at most 4 x max_message_bytes, far below).
  static constexpr size_t kMaxPush = 16 << 20;

 private:
  void on_socket_ready() override;
  void on_socket_reply(store::valkey::Reply r) override;
  void on_socket_failed(const std::string& why, Was was) override;
  bool on_socket_retry() override { return !wanted_.empty(); }
  std::shared_ptr<void> keepalive() override { return shared_from_this(); }

  Handlers handlers_;
  store::valkey::RespSocket sock_;
  std::set<std::string> wanted_;
};

}  // namespace parley::cluster
