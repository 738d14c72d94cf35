#include "url.h"

#include <cctype>

namespace parley::detail {

std::optional<Url> parse_url(const std::string& url) {
  Url u;
  const auto sep = url.find("://");
  if (sep == std::string::npos) return std::nullopt;
  u.scheme = url.substr(0, sep);
  for (auto& c : u.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (u.scheme != "ws" && u.scheme != "wss" && u.scheme != "tcp") return std::nullopt;
  std::string rest = url.substr(sep + 3);
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (u.scheme == "tcp" && u.path != "/") return std::nullopt;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    u.host = authority.substr(1, close - 1);
    authority = authority.substr(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') return std::nullopt;
      u.port = authority.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return std::nullopt;
  if (u.port.empty()) {
    if (u.scheme == "tcp") return std::nullopt;
    u.port = u.scheme == "wss" ? "443" : "80";
  }
  if (u.port.size() > 5) return std::nullopt;
  for (char c : u.port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  if (std::stoi(u.port) < 1 || std::stoi(u.port) > 65535) return std::nullopt;
  return u;
}

}  // namespace parley::detail
