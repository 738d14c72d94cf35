// The DynamoDB client's pure parts: endpoints, the table's keys and items, and
// the options the environment completes. (Calls against a server:
// tests/integration/persister_dynamodb_test.cc, with dynalite.)
#include "store/dynamodb/dynamo_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace parley::store::dynamodb {
namespace {

TEST(DynamoEndpoint, SchemesPortsAndHostHeader) {
  auto a = parse_endpoint("https://dynamodb.eu-west-1.amazonaws.com");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->port, 443);
  EXPECT_EQ(a->host_header, "dynamodb.eu-west-1.amazonaws.com");
  auto b = parse_endpoint("http://127.0.0.1:8000/");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->tls);
  EXPECT_EQ(b->host, "127.0.0.1");
  EXPECT_EQ(b->port, 8000);
  EXPECT_EQ(b->host_header, "127.0.0.1:8000");
  EXPECT_FALSE(parse_endpoint("ftp://x"));
  EXPECT_FALSE(parse_endpoint("https://x/path"));
  EXPECT_FALSE(parse_endpoint("http://x:0"));
  EXPECT_FALSE(parse_endpoint("http://x:99999"));
  EXPECT_FALSE(parse_endpoint("http://:80"));
}

TEST(DynamoItems, KeyAndAttributes) {
  EXPECT_EQ(partition_key("demo", "chat:a", 41, 1), "demo#chat:a");
  EXPECT_EQ(partition_key("demo", "chat:a", 41, 10), "demo#chat:a#1");
  EXPECT_EQ(partition_key("demo", "a#b", 5, 3), "demo#a#b#2");  // the suffix is always the last '#'
  ArchiveRow it{"demo", "chat:a", 7, 1764786615000, "alice", "m-7", "{\"t\":\"h\\u00e9\"}"};
  EXPECT_EQ(item_json(it, 1),
            "{\"channel\":{\"S\":\"demo#chat:a\"},\"seq\":{\"N\":\"7\"},\"ts\":{\"N\":\"1764786615000\"},"
            "\"sender\":{\"S\":\"alice\"},\"msg_id\":{\"S\":\"m-7\"},\"body\":{\"S\":\"{\\\"t\\\":\\\"h\\\\u00e9\\\"}\"}}");
  // Empty strings are left out (DynamoDB Local and older servers refuse them).
  ArchiveRow bare{"demo", "c", 1, 0, "", "", "null"};
  EXPECT_EQ(item_json(bare, 1),
            "{\"channel\":{\"S\":\"demo#c\"},\"seq\":{\"N\":\"1\"},\"ts\":{\"N\":\"0\"},\"body\":{\"S\":\"null\"}}");
}

TEST(DynamoOptions, EnvironmentFillsWhatTheConfigLeavesOut) {
  setenv("AWS_REGION", "ap-south-1", 1);
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
  auto o = resolve_options({});
  ASSERT_TRUE(o) << o.error().msg;
  EXPECT_EQ(o->region, "ap-south-1");
  EXPECT_EQ(o->endpoint, "https://dynamodb.ap-south-1.amazonaws.com");
  EXPECT_EQ(o->creds.access_key, "AKENV");
  EXPECT_EQ(o->creds.session_token, "TOKENV");
  // Keys from the config come with their own secret and token, never the env's.
  DynamoOptions c;
  c.region = "us-east-1";
  c.creds = {"AKCFG", "SKCFG", ""};
  c.endpoint = "http://127.0.0.1:4567";
  o = resolve_options(c);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->creds.secret_key, "SKCFG");
  EXPECT_EQ(o->creds.session_token, "");
  EXPECT_EQ(o->endpoint, "http://127.0.0.1:4567");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_REGION");
  EXPECT_FALSE(resolve_options({}));  // no region
  DynamoOptions r;
  r.region = "us-east-1";
  setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/parley-test-credentials", 1);  // not the machine's own
  EXPECT_FALSE(resolve_options(r));  // no credentials
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
}

TEST(DynamoReply, ThrottlingTypes) {
  for (const char* t : {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}) {
    Reply r;
    r.status = 400;
    r.type = t;
    EXPECT_TRUE(r.throttled()) << t;
  }
  Reply v;
  v.status = 400;
  v.type = "ValidationException";
  EXPECT_FALSE(v.throttled());
}

}  // namespace
}  // namespace parley::store::dynamodb
