// Base64url without padding (RFC 4648 section 5), the encoding of JWT segments.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace parley::auth {

std::string base64url_encode(std::string_view bytes);

// Strict: rejects '=', characters outside the url alphabet, impossible lengths
// and non-zero unused trailing bits, so every byte string has exactly one
// accepted encoding (a token cannot be altered without changing its bytes).
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace parley::auth
