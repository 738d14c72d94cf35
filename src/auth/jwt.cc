#include "auth/jwt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <simdjson.h>

#include <array>
#include <optional>
#include <string>

#include "auth/base64url.h"
#include "common/json_writer.h"
#include "protocol/identifier.h"

namespace parley::auth {
namespace {

// Far above any real token (a few hundred bytes, a few KiB with a long chans
// list) and small enough that a hostile hello costs next to nothing to refuse.
constexpr size_t kMaxTokenBytes = 4096;

Error unauthorized(std::string msg) { return Error{ErrorCode::kUnauthorized, std::move(msg)}; }

struct Segments {
  std::string_view header;
  std::string_view payload;
  std::string_view signature;
  std::string_view signed_part;  // "header.payload", the HMAC input
};

std::optional<Segments> split(std::string_view token) {
  size_t a = token.find('.');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = token.find('.', a + 1);
  if (b == std::string_view::npos || token.find('.', b + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return Segments{token.substr(0, a), token.substr(a + 1, b - a - 1), token.substr(b + 1),
                  token.substr(0, b)};
}

// Decodes a segment and parses it as a JSON object. The parser owns the
// object's memory, so it is passed in and must outlive the result.
std::optional<simdjson::dom::object> decode_object(simdjson::dom::parser& parser,
                                                   std::string_view segment,
                                                   std::string& storage) {
  auto bytes = base64url_decode(segment);
  if (!bytes) return std::nullopt;
  storage = std::move(*bytes);
  simdjson::dom::object obj;
  if (parser.parse(storage).get_object().get(obj) != simdjson::SUCCESS) return std::nullopt;
  return obj;
}

// Shared by peek and verify so both refuse exactly the same shapes.
Result<Segments> check_shape(std::string_view token) {
  if (token.size() > kMaxTokenBytes) return unauthorized("token too long");
  auto seg = split(token);
  if (!seg) return unauthorized("malformed token");
  return *seg;
}

Status check_header(simdjson::dom::parser& parser, std::string_view segment) {
  std::string storage;
  auto header = decode_object(parser, segment, storage);
  if (!header) return unauthorized("malformed token header");
  std::string_view alg;
  // Only HS256 exists here: accepting "none" or another algorithm named by the
  // (attacker-controlled) header is the classic JWT forgery.
  if ((*header)["alg"].get_string().get(alg) != simdjson::SUCCESS || alg != "HS256") {
    return unauthorized("unsupported token algorithm");
  }
  simdjson::dom::element typ;
  if ((*header)["typ"].get(typ) == simdjson::SUCCESS && !typ.is_string()) {
    return unauthorized("malformed token header");
  }
  // RFC 7515: extensions listed in "crit" must be understood; we know none.
  if ((*header)["crit"].error() != simdjson::NO_SUCH_FIELD) {
    return unauthorized("unsupported critical token header");
  }
  return Status::ok();
}

std::array<unsigned char, 32> hmac_sha256(std::string_view key, std::string_view data) {
  std::array<unsigned char, 32> mac{};
  unsigned int len = 0;
  static const char kEmpty = 0;  // OpenSSL wants a non-null key pointer
  HMAC(EVP_sha256(), key.empty() ? &kEmpty : key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &len);
  return mac;
}

Status read_claims(simdjson::dom::object obj, int64_t now_s, int64_t leeway_s, Claims& out) {
  std::string_view sub;
  // A signed token is still outside data: a NUL or a newline in a user id
  // would reach store keys, logs and other clients' frames.
  const protocol::IdFault fault = obj["sub"].get_string().get(sub) != simdjson::SUCCESS
                                      ? protocol::IdFault::kLength
                                      : protocol::id_fault(sub);
  if (fault != protocol::IdFault::kNone) {
    return unauthorized("token claim sub " + protocol::id_fault_text(fault));
  }
  std::string_view tenant;
  if (obj["tenant"].get_string().get(tenant) != simdjson::SUCCESS || tenant.empty()) {
    return unauthorized("token claim tenant must be a non-empty string");
  }
  simdjson::dom::element exp_el;
  if (obj["exp"].get(exp_el) != simdjson::SUCCESS) return unauthorized("token has no exp claim");
  int64_t exp = 0;
  if (exp_el.get_int64().get(exp) != simdjson::SUCCESS) {
    return unauthorized("token claim exp must be an integer");
  }
  // Written as a subtraction from now so a huge exp cannot overflow.
  if (now_s - leeway_s >= exp) return unauthorized("token expired");

  simdjson::dom::element nbf_el;
  if (obj["nbf"].get(nbf_el) == simdjson::SUCCESS) {
    int64_t nbf = 0;
    if (nbf_el.get_int64().get(nbf) != simdjson::SUCCESS) {
      return unauthorized("token claim nbf must be an integer");
    }
    if (now_s + leeway_s < nbf) return unauthorized("token not yet valid");
  }

  out.sub = std::string(sub);
  out.tenant = std::string(tenant);
  out.exp = exp;
  out.has_chans = false;
  out.chans.clear();
  out.mod = false;
  simdjson::dom::element mod_el;
  if (obj["mod"].get(mod_el) == simdjson::SUCCESS && mod_el.get_bool().get(out.mod) != simdjson::SUCCESS) {
    return unauthorized("token claim mod must be a boolean");
  }
  simdjson::dom::element chans_el;
  if (obj["chans"].get(chans_el) == simdjson::SUCCESS) {
    simdjson::dom::array chans;
    if (chans_el.get_array().get(chans) != simdjson::SUCCESS) {
      return unauthorized("token claim chans must be an array of strings");
    }
    for (simdjson::dom::element c : chans) {
      std::string_view pattern;
      if (c.get_string().get(pattern) != simdjson::SUCCESS) {
        return unauthorized("token claim chans must be an array of strings");
      }
      out.chans.emplace_back(pattern);
    }
    out.has_chans = true;
  }
  return Status::ok();
}

}  // namespace

Result<std::string> peek_tenant(std::string_view token) {
  auto seg = check_shape(token);
  if (!seg) return seg.error();
  simdjson::dom::parser parser;
  std::string storage;
  auto claims = decode_object(parser, seg->payload, storage);
  if (!claims) return unauthorized("malformed token claims");
  std::string_view tenant;
  if ((*claims)["tenant"].get_string().get(tenant) != simdjson::SUCCESS || tenant.empty()) {
    return unauthorized("token claim tenant must be a non-empty string");
  }
  return std::string(tenant);
}

Result<Claims> verify_hs256(std::string_view token, std::string_view secret, int64_t now_s,
                            int64_t leeway_s) {
  // With an empty key anyone can sign; config forbids it, this keeps it so.
  if (secret.empty()) return unauthorized("tenant has no token secret");
  if (leeway_s < 0) leeway_s = 0;
  auto seg = check_shape(token);
  if (!seg) return seg.error();
  simdjson::dom::parser parser;
  if (Status s = check_header(parser, seg->header); !s) return s.error();

  // The signature is checked before the claims are looked at, so nothing an
  // unauthenticated client writes into them is interpreted.
  auto sig = base64url_decode(seg->signature);
  if (!sig) return unauthorized("malformed token signature");
  auto mac = hmac_sha256(secret, seg->signed_part);
  if (sig->size() != mac.size() || CRYPTO_memcmp(sig->data(), mac.data(), mac.size()) != 0) {
    return unauthorized("bad token signature");
  }

  std::string storage;
  auto obj = decode_object(parser, seg->payload, storage);
  if (!obj) return unauthorized("malformed token claims");
  Claims claims;
  if (Status s = read_claims(*obj, now_s, leeway_s, claims); !s) return s.error();
  return claims;
}

std::string mint_hs256(const Claims& claims, std::string_view secret) {
  std::string payload;
  JsonWriter w(payload);
  w.begin_object().field("sub", claims.sub).field("tenant", claims.tenant);
  w.field_num("exp", claims.exp);
  if (claims.has_chans) {
    w.key("chans").begin_array();
    for (const auto& c : claims.chans) w.str(c);
    w.end_array();
  }
  if (claims.mod) w.field_bool("mod", true);
  w.end_object();

  std::string token = base64url_encode(R"({"alg":"HS256","typ":"JWT"})");
  token += '.';
  token += base64url_encode(payload);
  auto mac = hmac_sha256(secret, token);
  token += '.';
  token += base64url_encode(
      std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
  return token;
}

bool channel_allowed(const Claims& claims, std::string_view channel) {
  if (!claims.has_chans) return true;
  for (std::string_view p : claims.chans) {
    if (!p.empty() && p.back() == '*') {
      if (channel.starts_with(p.substr(0, p.size() - 1))) return true;
    } else if (p == channel) {
      return true;
    }
  }
  return false;
}

}  // namespace parley::auth
