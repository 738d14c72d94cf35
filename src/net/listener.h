// Acceptors. Each listener accepts on one loop and hands every new socket to
// the next loop round-robin (Asio accepts straight into a socket bound to the
// target loop's context), so connections spread evenly over the cores.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/loop_group.h"

namespace parley::net {

// Called on the target loop with the accepted socket; to refuse it, the
// callback lets the socket go (its destructor closes it).
using OnTcpSocket = std::function<void(boost::asio::ip::tcp::socket, unsigned loop)>;
using OnUnixSocket =
    std::function<void(boost::asio::local::stream_protocol::socket, unsigned loop)>;

// "host:port" as common/host_port.h parses it (IP literals and localhost).
Result<boost::asio::ip::tcp::endpoint> parse_endpoint(const std::string& text);

class Listener {
 public:
  virtual ~Listener() = default;
  // Stops accepting (any thread). Accepted connections are unaffected.
  virtual void stop() = 0;
  // The bound port (useful with port 0), 0 for Unix sockets.
  virtual uint16_t port() const = 0;
};

Result<std::unique_ptr<Listener>> listen_tcp(runtime::LoopGroup& loops, const std::string& address,
                                             OnTcpSocket on_socket);
// Removes a stale socket file first; the file is removed again on stop.
Result<std::unique_ptr<Listener>> listen_unix(runtime::LoopGroup& loops, const std::string& path,
                                              OnUnixSocket on_socket);

}  // namespace parley::net
