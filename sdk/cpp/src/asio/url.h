// The URLs the default transport dials: ws://host[:port][/path],
// wss://host[:port][/path] (TLS) and tcp://host:port. Pure; any thread.
#pragma once

#include <optional>
#include <string>

namespace parley::detail {

struct Url {
  std::string scheme;  // "ws", "wss" or "tcp"
  std::string host;    // without brackets for an IPv6 literal
  std::string port;
  std::string path;    // ws / wss only; "/" when absent
};

/// Empty when the URL is not one of the forms above.
std::optional<Url> parse_url(const std::string& url);

}  // namespace parley::detail
