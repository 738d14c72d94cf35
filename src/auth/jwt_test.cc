#include "auth/jwt.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/base64url.h"

namespace parley::auth {
namespace {

constexpr std::string_view kSecret = "test-secret-0123456789abcdef";
constexpr int64_t kNow = 1'764'460'800;

// Signs arbitrary header and claims JSON, for shapes mint_hs256 never writes.
std::string sign(std::string_view header_json, std::string_view claims_json,
                 std::string_view secret = kSecret) {
  std::string token = base64url_encode(header_json) + "." + base64url_encode(claims_json);
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), int(secret.size()),
       reinterpret_cast<const unsigned char*>(token.data()), token.size(), mac, &len);
  return token + "." + base64url_encode(std::string_view(reinterpret_cast<char*>(mac), len));
}

std::string sign_claims(std::string_view claims_json) {
  return sign(R"({"alg":"HS256","typ":"JWT"})", claims_json);
}

Claims user_claims() {
  Claims c;
  c.sub = "u1";
  c.tenant = "demo";
  c.exp = kNow + 3600;
  return c;
}

// Asserts an unauthorized result whose message is `msg` and does not leak the token.
void expect_refused(std::string_view token, std::string_view msg, int64_t now = kNow,
                    int64_t leeway = 60) {
  auto r = verify_hs256(token, kSecret, now, leeway);
  ASSERT_FALSE(r.is_ok()) << msg;
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(r.error().msg, msg);
  if (token.size() > 8) {
    EXPECT_EQ(r.error().msg.find(token.substr(0, 8)), std::string::npos);
  }
}

TEST(Jwt, MintedTokenVerifiesWithAllClaims) {
  Claims c = user_claims();
  c.has_chans = true;
  c.chans = {"chat:*", "world:7", "na\"me"};
  auto r = verify_hs256(mint_hs256(c, kSecret), kSecret, kNow);
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_EQ(r->sub, "u1");
  EXPECT_EQ(r->tenant, "demo");
  EXPECT_EQ(r->exp, kNow + 3600);
  EXPECT_TRUE(r->has_chans);
  EXPECT_EQ(r->chans, c.chans);
}

TEST(Jwt, MintedTokenWithoutChansAllowsEveryChannel) {
  auto r = verify_hs256(mint_hs256(user_claims(), kSecret), kSecret, kNow);
  ASSERT_TRUE(r.is_ok()) << r.error().msg;
  EXPECT_FALSE(r->has_chans);
  EXPECT_TRUE(channel_allowed(*r, "anything:at-all"));
}

TEST(Jwt, PeekTenantReadsTheClaimWithoutTheSecret) {
  auto t = peek_tenant(mint_hs256(user_claims(), "some-other-secret-xyz"));
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(*t, "demo");
  EXPECT_FALSE(peek_tenant("not-a-token").is_ok());
  EXPECT_FALSE(peek_tenant(sign_claims(R"({"sub":"u1","exp":1})")).is_ok());
}

TEST(Jwt, TamperedSignatureIsRefused) {
  std::string token = mint_hs256(user_claims(), kSecret);
  size_t sig = token.rfind('.') + 1;
  token[sig] = token[sig] == 'A' ? 'B' : 'A';
  expect_refused(token, "bad token signature");
}

TEST(Jwt, ClaimsSwappedUnderAnotherSignatureAreRefused) {
  std::string good = mint_hs256(user_claims(), kSecret);
  Claims admin = user_claims();
  admin.sub = "admin";
  std::string forged = mint_hs256(admin, "attacker-secret-0000000000");
  forged = forged.substr(0, forged.rfind('.')) + good.substr(good.rfind('.'));
  expect_refused(forged, "bad token signature");
}

TEST(Jwt, WrongSecretIsRefused) {
  expect_refused(mint_hs256(user_claims(), "another-secret-0123456789"), "bad token signature");
}

TEST(Jwt, EmptySecretRefusesEvenATokenSignedWithIt) {
  auto r = verify_hs256(mint_hs256(user_claims(), ""), "", kNow);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthorized);
}

TEST(Jwt, AlgNoneIsRefused) {
  std::string claims = base64url_encode(R"({"sub":"u1","tenant":"demo","exp":1764464400})");
  expect_refused(base64url_encode(R"({"alg":"none"})") + "." + claims + ".",
                 "unsupported token algorithm");
}

TEST(Jwt, OtherAlgorithmsAreRefusedEvenWhenTheHmacMatches) {
  std::string_view claims = R"({"sub":"u1","tenant":"demo","exp":1764464400})";
  for (std::string_view header : {R"({"alg":"HS512","typ":"JWT"})", R"({"alg":"RS256"})",
                                  R"({"alg":"hs256"})", R"({"typ":"JWT"})", R"({"alg":256})"}) {
    expect_refused(sign(header, claims), "unsupported token algorithm");
  }
}

TEST(Jwt, TypIsOptionalButMustBeAString) {
  std::string_view claims = R"({"sub":"u1","tenant":"demo","exp":1764464400})";
  EXPECT_TRUE(verify_hs256(sign(R"({"alg":"HS256"})", claims), kSecret, kNow).is_ok());
  EXPECT_TRUE(verify_hs256(sign(R"({"alg":"HS256","kid":"k1"})", claims), kSecret, kNow).is_ok());
  expect_refused(sign(R"({"alg":"HS256","typ":1})", claims), "malformed token header");
}

TEST(Jwt, CriticalHeaderExtensionsAreRefused) {
  expect_refused(sign(R"({"alg":"HS256","crit":["b64"],"b64":false})",
                      R"({"sub":"u1","tenant":"demo","exp":1764464400})"),
                 "unsupported critical token header");
}

TEST(Jwt, ExpiredBeyondLeewayIsRefused) {
  Claims c = user_claims();
  c.exp = kNow - 61;
  expect_refused(mint_hs256(c, kSecret), "token expired");
  c.exp = kNow;
  expect_refused(mint_hs256(c, kSecret), "token expired", kNow, 0);
}

TEST(Jwt, ExpiredWithinLeewayIsAccepted) {
  Claims c = user_claims();
  c.exp = kNow - 59;
  EXPECT_TRUE(verify_hs256(mint_hs256(c, kSecret), kSecret, kNow, 60).is_ok());
  c.exp = kNow + 1;
  EXPECT_TRUE(verify_hs256(mint_hs256(c, kSecret), kSecret, kNow, 0).is_ok());
}

TEST(Jwt, ExpIsRequiredAndAnInteger) {
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo"})"), "token has no exp claim");
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":1764464400.5})"),
                 "token claim exp must be an integer");
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":"1764464400"})"),
                 "token claim exp must be an integer");
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":18446744073709551615})"),
                 "token claim exp must be an integer");
}

TEST(Jwt, NotBeforeInTheFutureIsRefused) {
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":1764464400,"nbf":1764460900})"),
                 "token not yet valid");
  EXPECT_TRUE(verify_hs256(sign_claims(R"({"sub":"u1","tenant":"demo","exp":1764464400,)"
                                       R"("nbf":1764460830})"),
                           kSecret, kNow)
                  .is_ok());
}

TEST(Jwt, SubMustBeOneTo64Chars) {
  constexpr std::string_view kSubMsg = "token claim sub must be a string of 1-64 chars";
  Claims c = user_claims();
  c.sub = "";
  expect_refused(mint_hs256(c, kSecret), kSubMsg);
  c.sub = std::string(65, 'a');
  expect_refused(mint_hs256(c, kSecret), kSubMsg);
  c.sub = std::string(64, 'a');
  EXPECT_TRUE(verify_hs256(mint_hs256(c, kSecret), kSecret, kNow).is_ok());
  c.sub.clear();
  for (int i = 0; i < 64; ++i) c.sub += "\xc3\xa9";  // 64 chars in 128 bytes
  EXPECT_TRUE(verify_hs256(mint_hs256(c, kSecret), kSecret, kNow).is_ok());
  expect_refused(sign_claims(R"({"sub":7,"tenant":"demo","exp":1764464400})"), kSubMsg);
}

TEST(Jwt, SubWithAControlCharacterIsRefused) {
  constexpr std::string_view kMsg = "token claim sub must not contain control characters";
  expect_refused(sign_claims(R"({"sub":"a\u0000b","tenant":"demo","exp":1764464400})"), kMsg);
  expect_refused(sign_claims(R"({"sub":"a\nb","tenant":"demo","exp":1764464400})"), kMsg);
  expect_refused(sign_claims(R"({"sub":"a\u007f","tenant":"demo","exp":1764464400})"), kMsg);
  expect_refused(sign_claims(R"({"sub":"\u0085","tenant":"demo","exp":1764464400})"), kMsg);
  EXPECT_TRUE(verify_hs256(sign_claims(R"({"sub":"a b\u00e9","tenant":"demo","exp":1764464400})"),
                           kSecret, kNow)
                  .is_ok());
}

TEST(Jwt, TenantMustBeANonEmptyString) {
  constexpr std::string_view kMsg = "token claim tenant must be a non-empty string";
  expect_refused(sign_claims(R"({"sub":"u1","exp":1764464400})"), kMsg);
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"","exp":1764464400})"), kMsg);
  expect_refused(sign_claims(R"({"sub":"u1","tenant":["demo"],"exp":1764464400})"), kMsg);
}

TEST(Jwt, ChansMustBeAnArrayOfStrings) {
  constexpr std::string_view kMsg = "token claim chans must be an array of strings";
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":1764464400,"chans":"a"})"),
                 kMsg);
  expect_refused(sign_claims(R"({"sub":"u1","tenant":"demo","exp":1764464400,"chans":["a",1]})"),
                 kMsg);
}

TEST(Jwt, MalformedSegmentsAreRefused) {
  std::string good = mint_hs256(user_claims(), kSecret);
  expect_refused("", "malformed token");
  expect_refused("abc", "malformed token");
  expect_refused(good.substr(0, good.rfind('.')), "malformed token");  // two segments
  expect_refused(good + ".e30", "malformed token");                    // four segments
  expect_refused(good + "=", "malformed token signature");
  std::string std_alphabet = good;
  std_alphabet[std_alphabet.rfind('.') + 2] = '+';
  expect_refused(std_alphabet, "malformed token signature");
  std::string bad_payload = good;
  bad_payload.insert(good.find('.') + 1, "=");
  expect_refused(bad_payload, "bad token signature");  // signature covers raw segments
  expect_refused(sign("not json", "{}"), "malformed token header");
  expect_refused(sign(R"({"alg":"HS256"})", R"(["not","an","object"])"),
                 "malformed token claims");
}

TEST(Jwt, OverlongTokenIsRefusedBeforeParsing) {
  Claims c = user_claims();
  c.has_chans = true;
  c.chans.assign(400, "chat:room-0000");
  expect_refused(mint_hs256(c, kSecret), "token too long");
  EXPECT_FALSE(peek_tenant(mint_hs256(c, kSecret)).is_ok());
}

TEST(Jwt, ChannelPatternsMatchExactlyOrByPrefix) {
  Claims c = user_claims();
  c.has_chans = true;
  c.chans = {"chat:*", "world:7"};
  EXPECT_TRUE(channel_allowed(c, "chat:lobby"));
  EXPECT_TRUE(channel_allowed(c, "chat:"));
  EXPECT_FALSE(channel_allowed(c, "chat"));
  EXPECT_TRUE(channel_allowed(c, "world:7"));
  EXPECT_FALSE(channel_allowed(c, "world:70"));
  EXPECT_FALSE(channel_allowed(c, "world:"));
  c.chans = {"*"};
  EXPECT_TRUE(channel_allowed(c, "anything"));
  c.chans.clear();  // present but empty: nothing
  EXPECT_FALSE(channel_allowed(c, "chat:lobby"));
}

}  // namespace
}  // namespace parley::auth
