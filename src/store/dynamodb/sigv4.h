// AWS Signature Version 4 (HMAC-SHA256) for the DynamoDB client: the canonical
// request, the string to sign, the derived key and the Authorization header, as
// AWS's SigV4 documentation defines them. No AWS SDK: OpenSSL's SHA-256 and
// HMAC only.
//
// Every header handed in is signed except the ones AWS's SDKs never sign
// (user-agent, connection, expect, proxy-*, ...: a proxy may rewrite them), so a request
// signed here and one signed by @aws-sdk/client-dynamodb with the same headers
// carry the same signature (sigv4_test.cc checks recorded ones). The path is
// used as given: it must already be URI-encoded (DynamoDB's is always "/").
//
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parley::store::dynamodb {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty: long-lived keys (no x-amz-security-token)
};

struct SignInput {
  std::string method;  // "POST"
  std::string path;    // encoded, "/"
  std::vector<std::pair<std::string, std::string>> query;    // not encoded
  std::vector<std::pair<std::string, std::string>> headers;  // host and x-amz-date among them
  std::string_view payload;
};

// Lower-case hex of SHA-256(data).
std::string sha256_hex(std::string_view data);
// The signing key: HMAC chain over "AWS4"+secret, yyyymmdd, region, service, "aws4_request".
std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service);

struct Signed {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "content-type;host;x-amz-date"
  std::string signature;       // hex
  std::string authorization;   // the Authorization header's value
};
// amz_date is the request's X-Amz-Date value, "20150830T123600Z".
Signed sign(const SignInput& in, const AwsCredentials& creds, std::string_view region,
            std::string_view service, std::string_view amz_date);

// "20150830T123600Z" for a Unix time in seconds.
std::string amz_date(long long unix_seconds);

}  // namespace parley::store::dynamodb
