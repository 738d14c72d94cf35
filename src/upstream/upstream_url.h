// The `upstream` URL of a namespace: http://host[:port][/path][?query].
// Pure parsing, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace parley::upstream {

struct UpstreamUrl {
  std::string host;           // a name or an IPv4 address ([v6] without brackets)
  uint16_t port = 80;
  std::string target = "/";   // path and query, as the request line carries it
  std::string host_header;    // host[:port] for the Host header
};

// Error (bad_request) when `url` is not an http:// URL with a host.
Result<UpstreamUrl> parse_upstream_url(std::string_view url);

}  // namespace parley::upstream
