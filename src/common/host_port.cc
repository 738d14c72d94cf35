#include "common/host_port.h"

#include <arpa/inet.h>

#include <charconv>

namespace parley {
namespace {
Error bad(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }
}  // namespace

Result<HostPort> parse_host_port(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("expected host:port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || r.ec != std::errc() || r.ptr != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  HostPort out;
  out.port = static_cast<uint16_t>(port);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("an IPv6 address must be in brackets: [::1]:7700");
    out.ip = std::string(host.substr(1, host.size() - 2));
    out.v6 = true;
  } else {
    if (host.find(':') != std::string_view::npos) {
      return bad("an IPv6 address must be in brackets: [::1]:7700");
    }
    out.ip = host == "localhost" ? "127.0.0.1" : std::string(host);
  }
  unsigned char buf[16];
  if (inet_pton(out.v6 ? AF_INET6 : AF_INET, out.ip.c_str(), buf) != 1) {
    return bad(out.v6 ? "not an IPv6 address"
                      : "the host must be an IP address or localhost, not a name (\"" +
                            out.ip + "\")");
  }
  return out;
}

}  // namespace parley
