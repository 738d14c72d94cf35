// HS256 JSON Web Tokens: verification of client tokens and minting for
// `parley token`. Hand-written over OpenSSL's HMAC because the format is tiny
// and a JWT library would bring algorithm negotiation we must refuse anyway.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace parley::auth {

struct Claims {
  std::string sub;                 // user id, 1-64 chars
  std::string tenant;
  int64_t exp = 0;                 // seconds since the epoch
  bool has_chans = false;          // absent: every channel of the tenant
  std::vector<std::string> chans;  // patterns; '*' at the end matches any suffix
  // `mod`: true makes the user a moderator (PROTOCOL.md "Moderation"): it may
  // edit and delete every message of the channels it may use.
  bool mod = false;
};

// Reads the tenant claim without verifying (to pick the secret). Error when the
// token is not a well-formed JWT.
Result<std::string> peek_tenant(std::string_view token);

// Verifies signature (HS256 only; "alg" must be exactly HS256), exp with
// `leeway_s` of leeway against `now_s`, and the claim shapes.
// Every failure is ErrorCode::kUnauthorized with a message that never echoes the token.
Result<Claims> verify_hs256(std::string_view token, std::string_view secret, int64_t now_s,
                            int64_t leeway_s = 60);

std::string mint_hs256(const Claims& claims, std::string_view secret);

// True when `channel` matches one of the patterns (or has_chans is false).
bool channel_allowed(const Claims& claims, std::string_view channel);

}  // namespace parley::auth
