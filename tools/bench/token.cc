#include "token.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fmt/format.h>

namespace bench {
namespace {

std::string encode(std::string_view in, const char* alphabet, bool pad) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<uint8_t>(in[k]); };
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = b(i) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (pad) out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (b(i) << 16) | (b(i + 1) << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    if (pad) out += "=";
  }
  return out;
}

}  // namespace

std::string base64url(std::string_view in) {
  return encode(in, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false);
}

std::string base64(std::string_view in) {
  return encode(in, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true);
}

std::string mint_token(std::string_view secret, std::string_view tenant,
                       std::string_view user, int64_t exp_s) {
  std::string signing = base64url(R"({"alg":"HS256","typ":"JWT"})") + "." +
                        base64url(fmt::format(R"({{"sub":"{}","tenant":"{}","exp":{}}})",
                                              user, tenant, exp_s));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing.data()), signing.size(), mac, &mac_len);
  return signing + "." + base64url(std::string_view(reinterpret_cast<char*>(mac), mac_len));
}

}  // namespace bench
