// A raw TCP connection (PROTOCOL.md "Transports": a 4-byte big-endian length,
// then the frame): one read loop that cuts frames out of large reads, and one
// write in flight carrying every frame queued behind the previous one.
//
// Thread: the default transport's io_context (the client's poll() thread).
#pragma once

#include <boost/asio/io_context.hpp>

#include "session.h"

namespace parley::detail {

std::shared_ptr<Session> make_tcp_session(boost::asio::io_context& io, ConnectionHandler& h,
                                          const ConnectOptions& o);

}  // namespace parley::detail
