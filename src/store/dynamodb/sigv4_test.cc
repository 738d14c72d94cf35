// The SigV4 signer against signatures it did not compute: AWS's published
// examples, and requests that @aws-sdk/client-dynamodb signed
// (tests/dynamodb/sigv4_vectors.json, printed by tests/dynamodb/sigv4_reference.mjs;
// the ctest sigv4_reference_test signs them afresh with the installed SDK and runs
// this test on that output).
#include "store/dynamodb/sigv4.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <string>

namespace parley::store::dynamodb {
namespace {

std::string vectors_path() {
  const char* env = std::getenv("PARLEY_SIGV4_VECTORS");
  return env && *env ? env : PARLEY_SIGV4_VECTORS_FILE;
}

// AWS's SigV4 test suite, get-vanilla: GET / with Host and X-Amz-Date only.
TEST(SigV4, AwsSuiteGetVanilla) {
  SignInput in{"GET", "/", {}, {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}}, ""};
  const Signed s = sign(in, {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""}, "us-east-1",
                        "service", "20150830T123600Z");
  EXPECT_EQ(s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

// The S3 documentation's signed GET Object example (Range header, payload hash header).
TEST(SigV4, AwsS3GetObjectExample) {
  SignInput in{"GET",
               "/test.txt",
               {},
               {{"Host", "examplebucket.s3.amazonaws.com"},
                {"Range", "bytes=0-9"},
                {"x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
                {"x-amz-date", "20130524T000000Z"}},
               ""};
  const Signed s = sign(in, {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""},
                        "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(sha256_hex(s.canonical_request), "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, HeaderValuesTrimmedAndUnsignableDropped) {
  SignInput a{"POST", "/", {}, {{"Host", "h"}, {"X-Amz-Date", "20150830T123600Z"}, {"X-Pad", "  a   b  "}}, "x"};
  SignInput b{"POST", "/", {}, {{"x-pad", "a b"}, {"host", "h"}, {"x-amz-date", "20150830T123600Z"},
                                {"User-Agent", "anything"}, {"Connection", "keep-alive"}}, "x"};
  const AwsCredentials c{"AK", "SK", ""};
  EXPECT_EQ(sign(a, c, "r", "s", "20150830T123600Z").authorization,
            sign(b, c, "r", "s", "20150830T123600Z").authorization);
  EXPECT_EQ(sign(b, c, "r", "s", "20150830T123600Z").signed_headers, "host;x-amz-date;x-pad");
}

TEST(SigV4, AmzDate) { EXPECT_EQ(amz_date(1440938160), "20150830T123600Z"); }

// Every request in the vectors file: the same Authorization from the same
// method, path, headers, body, credentials, region and service.
TEST(SigV4, EqualsReferenceClient) {
  simdjson::ondemand::parser parser;
  auto json = simdjson::padded_string::load(vectors_path());
  ASSERT_EQ(json.error(), simdjson::SUCCESS) << vectors_path();
  simdjson::ondemand::document doc = parser.iterate(json.value());
  size_t n = 0, from_sdk = 0;
  for (auto v : doc.get_array()) {
    auto str = [&](const char* key) { return std::string(std::string_view(v[key].get_string().value())); };
    const std::string name = str("name");
    const std::string source = str("source");
    AwsCredentials creds{str("access_key"), str("secret_key"), str("session_token")};
    SignInput in;
    in.method = str("method");
    in.path = str("path");
    for (auto f : v["query"].get_object()) {
      in.query.emplace_back(std::string(f.unescaped_key().value()),
                            std::string(std::string_view(f.value().get_string().value())));
    }
    std::string date;
    for (auto f : v["headers"].get_object()) {
      std::string k(f.unescaped_key().value());
      std::string val(std::string_view(f.value().get_string().value()));
      if (k == "x-amz-date") date = val;
      in.headers.emplace_back(std::move(k), std::move(val));
    }
    const std::string body = str("body");
    in.payload = body;
    const std::string region = str("region"), service = str("service"), want = str("authorization");
    EXPECT_EQ(sign(in, creds, region, service, date).authorization, want) << name;
    ++n;
    if (source == "@aws-sdk/client-dynamodb") ++from_sdk;
  }
  EXPECT_GE(n, 6u);
  EXPECT_GE(from_sdk, 4u);  // DescribeTable, CreateTable, BatchWriteItem, Query
}

}  // namespace
}  // namespace parley::store::dynamodb
