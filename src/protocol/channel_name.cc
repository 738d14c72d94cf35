#include "protocol/decoder.h"

#include "protocol/client_op.h"

namespace parley::protocol {

namespace {

constexpr bool is_channel_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == ':' || c == '@' || c == '-';
}

}  // namespace

bool is_valid_channel(std::string_view name) {
  if (name.empty() || name.size() > kMaxChannelLength) return false;
  for (char c : name) {
    if (!is_channel_char(c)) return false;
  }
  return true;
}

std::string_view channel_namespace(std::string_view name) {
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos) return "default";
  // ":x" is in the empty namespace, as the letter of PROTOCOL.md says; it can
  // only ever get the default namespace options.
  return name.substr(0, colon);
}

}  // namespace parley::protocol
