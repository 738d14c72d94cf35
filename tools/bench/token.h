// Client tokens for Parley: HS256 JWTs minted locally with the tenant secret, so a
// run needs nothing but the secret (same claims `parley token` would put in).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bench {

std::string base64url(std::string_view in);
std::string base64(std::string_view in);
// {"sub":user,"tenant":tenant,"exp":exp_s} signed with secret.
std::string mint_token(std::string_view secret, std::string_view tenant,
                       std::string_view user, int64_t exp_s);

}  // namespace bench
