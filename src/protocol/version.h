// The protocol version a `hello` must carry (PROTOCOL.md "Connecting": `v` other
// than this gets bad_request and close 4002), and this build's own version
// (CMake's project(VERSION), shown by `parley version` and the admin API).
#pragma once

#include <cstdint>
#include <string_view>

namespace parley::protocol {

inline constexpr int64_t kProtocolVersion = 1;

std::string_view server_version();

}  // namespace parley::protocol
