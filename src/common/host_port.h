// The one parser of "host:port" listen addresses (config checking and the
// listeners both use it, so a file that checks also binds).
//
// host is an IPv4 literal, a bracketed IPv6 literal ("[::1]:7700") or
// "localhost" (127.0.0.1). Host names are refused rather than resolved: a
// listen address is a choice of local interface, DNS may answer differently
// at start than at check time, and a name with several addresses would bind
// only one of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace parley {

struct HostPort {
  std::string ip;  // the literal, without brackets ("127.0.0.1", "::1")
  uint16_t port = 0;
  bool v6 = false;
};

// Error (kBadRequest) says what is wrong, without repeating `text`.
Result<HostPort> parse_host_port(std::string_view text);

}  // namespace parley
