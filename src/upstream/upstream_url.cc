#include "upstream/upstream_url.h"

#include <charconv>

namespace parley::upstream {

namespace {
Error bad(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_' || c == ':';
}
}  // namespace

Result<UpstreamUrl> parse_upstream_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) return bad("upstream must be an http:// URL");
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  UpstreamUrl u;
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (u.target[0] == '?') u.target.insert(u.target.begin(), '/');
  for (char c : u.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad("upstream path has a space or control character");
  }
  if (authority.find('@') != std::string_view::npos) return bad("upstream must not carry credentials");
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("upstream has an unclosed [");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("upstream has junk after ]");
      port = after.substr(1);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 upstream host needs [brackets]");
  }
  if (host.empty()) return bad("upstream has no host");
  for (char c : host) {
    if (!host_char(c)) return bad("upstream host has a bad character");
  }
  if (!port.empty()) {
    unsigned p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p == 0 || p > 65535) {
      return bad("upstream port must be 1-65535");
    }
    u.port = static_cast<uint16_t>(p);
  }
  u.host = std::string(host);
  u.host_header = std::string(authority);
  return u;
}

}  // namespace parley::upstream
