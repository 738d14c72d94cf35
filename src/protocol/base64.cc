#include "protocol/base64.h"

#include <openssl/evp.h>

namespace parley::protocol {

void append_base64(std::string& out, std::string_view bytes) {
  const size_t at = out.size();
  out.resize(at + 4 * ((bytes.size() + 2) / 3) + 1);  // EVP_EncodeBlock writes a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(at + static_cast<size_t>(n));
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string bytes(text.size() / 4 * 3, '\0');
  if (!text.empty()) {
    // EVP_DecodeBlock is lenient (whitespace, padding counted as zero bytes);
    // the round trip below is what makes the rule strict.
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                                  reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
    if (n < 0) return std::nullopt;
    size_t pad = 0;
    if (text.back() == '=') ++pad;
    if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
    bytes.resize(static_cast<size_t>(n) - pad);
  }
  std::string again;
  append_base64(again, bytes);
  if (again != text) return std::nullopt;
  return bytes;
}

}  // namespace parley::protocol
