// The default transport: WebSocket (ws://host:port/path, RFC 6455 via
// Boost.Beast), WebSocket over TLS (wss://host:port/path, OpenSSL) and raw
// TCP (tcp://host:port, 4-byte big-endian length framing, PROTOCOL.md
// "Transports") on one Asio io_context that runs only inside poll(), on the
// caller's thread: no thread of its own, no locks.
#pragma once

#include <memory>
#include <string>

#include "parley/transport.h"

namespace parley {

/// TLS of wss:// connections. The server's certificate is always verified:
/// its chain must end at a trusted CA and it must name the URL's host (a DNS
/// name, or the IP address of an IP literal); TLS 1.2 or later.
struct DefaultTransportOptions {
  /// A PEM file of CA certificates to trust instead of the system's, e.g. the
  /// self-signed certificate of a development server or a studio's own CA.
  /// Empty: OpenSSL's default verify paths (on Debian /etc/ssl/certs, from
  /// ca-certificates; SSL_CERT_FILE / SSL_CERT_DIR override them). A file
  /// that does not load fails each wss:// connect with the reason.
  std::string tls_ca_file;
};

/// Thread: the returned transport is used from one thread (the poll() thread).
std::shared_ptr<Transport> make_default_transport();
std::shared_ptr<Transport> make_default_transport(const DefaultTransportOptions& options);

}  // namespace parley
