// A WebSocket connection (RFC 6455) on Boost.Beast, ws:// or wss:// (TLS on
// OpenSSL): resolve, connect, TLS handshake, WebSocket handshake (offering
// the codec's subprotocol), then one read loop and one write in flight with a
// byte-capped queue behind it.
//
// Thread: the default transport's io_context (the client's poll() thread).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "session.h"

namespace parley::detail {

std::shared_ptr<Session> make_ws_session(boost::asio::io_context& io, ConnectionHandler& h,
                                         const ConnectOptions& o);
/// wss://: TLS with `tls` (made by the transport: its CAs, peer verification on).
std::shared_ptr<Session> make_wss_session(boost::asio::io_context& io, ConnectionHandler& h,
                                          const ConnectOptions& o, std::shared_ptr<boost::asio::ssl::context> tls);

}  // namespace parley::detail
