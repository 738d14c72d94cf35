// Standard base64 with padding (RFC 4648 section 4): the text of a `$bin`
// body value (PROTOCOL.md "Binary encoding: MessagePack"). Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace parley::protocol {

// Appends the padded base64 of `bytes` to `out`.
void append_base64(std::string& out, std::string_view bytes);

// Strict: the text must be exactly what append_base64 writes for some bytes
// (alphabet, padding, length, zero unused bits), so a `$bin` value converts to
// bin and back to the same text; anything else is not base64 (nullopt).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace parley::protocol
