#include "store/dynamodb/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <ctime>

namespace parley::store::dynamodb {

namespace {

std::string hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &len);
  return std::string(reinterpret_cast<const char*>(mac.data()), len);
}

// RFC 3986 unreserved characters stay; everything else is %XX (upper case), as SigV4 wants.
std::string uri_encode(std::string_view s) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Leading and trailing blanks dropped, inner runs of blanks (CR and LF among
// them, as the SDKs count them) collapsed to one space.
std::string trim_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The SDKs' list (@smithy/signature-v4 ALWAYS_UNSIGNABLE_HEADERS): hop-by-hop
// or rewritten on the way, so never part of a signature.
bool unsignable(const std::string& name) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "authorization", "cache-control", "connection", "expect",    "from",
      "keep-alive",    "max-forwards",  "pragma",     "referer",   "te",
      "trailer",       "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end() || name.rfind("proxy-", 0) == 0 ||
         name.rfind("sec-", 0) == 0;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data());
  return hex(d.data(), d.size());
}

std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service) {
  std::string k = hmac("AWS4" + std::string(secret), date);
  k = hmac(k, region);
  k = hmac(k, service);
  return hmac(k, "aws4_request");
}

Signed sign(const SignInput& in, const AwsCredentials& creds, std::string_view region,
            std::string_view service, std::string_view amz_date) {
  Signed out;
  // Headers: lower-case names, sorted; repeated names join their values with ','.
  std::vector<std::pair<std::string, std::string>> hs;
  for (const auto& [name, value] : in.headers) {
    std::string n = lower(name);
    if (unsignable(n)) continue;
    hs.emplace_back(std::move(n), trim_value(value));
  }
  std::stable_sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers;
  for (size_t i = 0; i < hs.size(); ++i) {
    if (i > 0 && hs[i].first == hs[i - 1].first) {
      canonical_headers.back() = ',';
      canonical_headers += hs[i].second + '\n';
      continue;
    }
    if (!out.signed_headers.empty()) out.signed_headers += ';';
    out.signed_headers += hs[i].first;
    canonical_headers += hs[i].first + ':' + hs[i].second + '\n';
  }
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : in.query) q.emplace_back(uri_encode(k), uri_encode(v));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q) {
    if (!query.empty()) query += '&';
    query += k + '=' + v;
  }
  out.canonical_request = in.method + '\n' + (in.path.empty() ? "/" : in.path) + '\n' + query + '\n' +
                          canonical_headers + '\n' + out.signed_headers + '\n' + sha256_hex(in.payload);
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope =
      std::string(date) + '/' + std::string(region) + '/' + std::string(service) + "/aws4_request";
  out.string_to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + '\n' + scope + '\n' + sha256_hex(out.canonical_request);
  const std::string key = signing_key(creds.secret_key, date, region, service);
  const std::string mac = hmac(key, out.string_to_sign);
  out.signature = hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + creds.access_key + '/' + scope +
                      ", SignedHeaders=" + out.signed_headers + ", Signature=" + out.signature;
  return out;
}

std::string amz_date(long long unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace parley::store::dynamodb
