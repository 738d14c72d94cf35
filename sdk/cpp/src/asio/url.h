// The URLs the default transport dials: ws://host[:port][/path] and
// tcp://host:port. Pure; any thread.
#pragma once

#include <optional>
#include <string>

namespace parley::detail {

struct Url {
  std::string scheme;  // "ws" or "tcp"
  std::string host;    // without brackets for an IPv6 literal
  std::string port;
  std::string path;    // ws only; "/" when absent
};

/// Empty when the URL is not one of the forms above.
std::optional<Url> parse_url(const std::string& url);

}  // namespace parley::detail
