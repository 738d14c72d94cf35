// Where the DynamoDB client's keys come from, in the order AWS's SDKs look
// (the first source that has keys is used, for the life of the process):
//  1. [dynamodb] access_key_id, secret_access_key, session_token;
//  2. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
//  3. the shared credentials file, AWS_SHARED_CREDENTIALS_FILE or
//     ~/.aws/credentials, profile AWS_PROFILE or "default"
//     (aws_access_key_id, aws_secret_access_key, aws_session_token);
//  4. the container credentials endpoint (ECS task roles, EKS Pod Identity):
//     AWS_CONTAINER_CREDENTIALS_FULL_URI, or http://169.254.170.2 followed by
//     AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; its Authorization header is the
//     content of AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read at each fetch:
//     the agent rotates it) or AWS_CONTAINER_AUTHORIZATION_TOKEN.
// The instance metadata service (IMDS) is not read.
//
// Keys from the endpoint expire: they are fetched on first use and again once
// less than kRefreshAheadMs remain before their Expiration (what AWS's SDKs
// do), so no request is signed with keys about to lapse. A failed refetch keeps
// the old keys while they are still valid and is tried again at most every
// kRetryMs; past their expiry the caller gets the error (its retry policy
// applies). As AWS's SDKs do, a plain-http endpoint must be on loopback or one
// of the container agents' link-local addresses, so the token never crosses a
// network in clear.
//
// Thread: a CredentialProvider has one owner (the DynamoClient that signs with
// it); blocking (the fetch is an HTTP call).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/dynamodb/sigv4.h"

namespace parley::store::dynamodb {

class HttpClient;

inline constexpr int64_t kRefreshAheadMs = 5 * 60 * 1000;
inline constexpr int64_t kRetryMs = 1000;

struct CredentialSource {
  std::string origin;       // "config", "environment", "shared file <path> [profile]", "container <url>"
  AwsCredentials fixed;     // sources 1 to 3
  std::string container;    // source 4: the endpoint's URL (with its path)
  std::string token;        // source 4: AWS_CONTAINER_AUTHORIZATION_TOKEN
  std::string token_file;   // source 4: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (wins over token)
  bool from_container() const { return !container.empty(); }
};

// The first source of the chain above that has keys (`configured` is source
// 1); an error listing where it looked when none has.
Result<CredentialSource> find_credentials(const AwsCredentials& configured);

// A profile's keys in a shared credentials file's text (INI: [profile], key =
// value, # and ; comments); kNotFound when the profile is not there,
// kBadRequest when it lacks a key or secret.
Result<AwsCredentials> parse_shared_credentials(std::string_view text, std::string_view profile);

// The container endpoint's answer: {"AccessKeyId", "SecretAccessKey", "Token",
// "Expiration": "2026-12-04T03:00:00Z"}; expires_ms 0 when it gives no expiry.
struct ExpiringCredentials {
  AwsCredentials creds;
  int64_t expires_ms = 0;  // Unix ms
};
Result<ExpiringCredentials> parse_container_credentials(std::string_view json);

class CredentialProvider {
 public:
  CredentialProvider(CredentialSource source, uint32_t timeout_ms);
  ~CredentialProvider();

  // The keys to sign a request made now with.
  Result<AwsCredentials> current();

  const CredentialSource& source() const { return source_; }

 private:
  Status fetch();

  CredentialSource source_;
  uint32_t timeout_ms_;
  std::string path_;  // the container endpoint's path and query
  std::unique_ptr<HttpClient> http_;
  ExpiringCredentials held_;
  bool have_ = false;
  int64_t next_try_ms_ = 0;  // after a failed refetch
};

}  // namespace parley::store::dynamodb
