// The default transport: WebSocket (ws://host:port/path, RFC 6455 via
// Boost.Beast) and raw TCP (tcp://host:port, 4-byte big-endian length
// framing, PROTOCOL.md "Transports") on one Asio io_context that runs only
// inside poll(), on the caller's thread: no thread of its own, no locks.
#pragma once

#include <memory>

#include "parley/transport.h"

namespace parley {

/// Thread: the returned transport is used from one thread (the poll() thread).
std::shared_ptr<Transport> make_default_transport();

}  // namespace parley
