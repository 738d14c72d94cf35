// Where the DynamoDB client's keys come from (credentials.h): the chain's
// order, the shared credentials file, and the container credentials endpoint
// served by a Node process this test starts (tests/dynamodb/creds_server.mjs),
// whose keys expire and must be fetched again before they do.
#include "store/dynamodb/credentials.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "store/dynamodb/dynamo_client.h"
#include "store/dynamodb/http_client.h"
#include "support/child_process.h"

namespace parley::store::dynamodb {
namespace {

using namespace std::chrono_literals;
namespace t = parley::testing;

// Every variable the chain reads, cleared for a test and put back after it.
class CredentialEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE",
      "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
      "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"};
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* x = std::getenv(v)) saved_[v] = x;
      ::unsetenv(v);
    }
    dir_ = t::make_temp_dir("parley-creds-");
    ASSERT_FALSE(dir_.empty());
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ + "/none").c_str(), 1);  // not the machine's own
  }
  void TearDown() override {
    for (const char* v : kVars) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::map<std::string, std::string> saved_;
  std::string dir_;
};

TEST(SharedCredentials, ProfilesCommentsAndMistakes) {
  const std::string text =
      "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key=sd\n\n"
      "; other\n[ bench ]\n  AWS_ACCESS_KEY_ID = AKIDBENCH  \naws_secret_access_key = sb\naws_session_token = tb\n"
      "[profile half]\naws_access_key_id = AKIDHALF\n";
  auto d = parse_shared_credentials(text, "default");
  ASSERT_TRUE(d) << d.error().msg;
  EXPECT_EQ(d->access_key, "AKIDDEFAULT");
  EXPECT_EQ(d->secret_key, "sd");
  EXPECT_EQ(d->session_token, "");
  auto b = parse_shared_credentials(text, "bench");
  ASSERT_TRUE(b) << b.error().msg;
  EXPECT_EQ(b->access_key, "AKIDBENCH");
  EXPECT_EQ(b->secret_key, "sb");
  EXPECT_EQ(b->session_token, "tb");
  EXPECT_EQ(parse_shared_credentials(text, "half").error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(parse_shared_credentials(text, "missing").error().code, ErrorCode::kNotFound);
}

TEST(ContainerCredentials, AnswerAndExpiration) {
  auto c = parse_container_credentials(
      R"({"RoleArn":"arn:x","AccessKeyId":"AK","SecretAccessKey":"SK","Token":"TK","Expiration":"2026-12-04T03:00:00Z","N":1})");
  ASSERT_TRUE(c) << c.error().msg;
  EXPECT_EQ(c->creds.access_key, "AK");
  EXPECT_EQ(c->creds.secret_key, "SK");
  EXPECT_EQ(c->creds.session_token, "TK");
  EXPECT_EQ(c->expires_ms, 1796353200000);  // date -d 2026-12-04T03:00:00Z +%s
  auto frac = parse_container_credentials(
      R"({"AccessKeyId":"AK","SecretAccessKey":"SK","Expiration":"2026-12-04T03:00:00.123Z"})");
  ASSERT_TRUE(frac);
  EXPECT_EQ(frac->expires_ms, 1796353200000);
  EXPECT_FALSE(parse_container_credentials(R"({"AccessKeyId":"AK"})"));
  EXPECT_FALSE(parse_container_credentials(R"({"AccessKeyId":"AK","SecretAccessKey":"SK","Expiration":"soon"})"));
  EXPECT_FALSE(parse_container_credentials("[]"));
  EXPECT_FALSE(parse_container_credentials("{\"AccessKeyId\":"));
}

TEST_F(CredentialEnv, TheChainsOrder) {
  const std::string file = write("credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = sf\n"
                                                "[p]\naws_access_key_id = AKIDP\naws_secret_access_key = sp\n");
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds", 1);
  auto s = find_credentials({});
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->from_container());  // the file is not there yet
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  s = find_credentials({});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->fixed.access_key, "AKIDFILE");
  EXPECT_EQ(s->origin, "shared file " + file + " [default]");
  ::setenv("AWS_PROFILE", "p", 1);
  EXPECT_EQ(find_credentials({})->fixed.access_key, "AKIDP");
  ::setenv("AWS_PROFILE", "nope", 1);
  EXPECT_TRUE(find_credentials({})->from_container());  // no such profile: on down the chain
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "se", 1);
  EXPECT_EQ(find_credentials({})->origin, "environment");
  EXPECT_EQ(find_credentials({"AKIDCONF", "sc", ""})->origin, "config");
  // What resolve_options hands the client.
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::setenv("AWS_PROFILE", "p", 1);
  DynamoOptions o;
  o.region = "us-east-1";
  auto r = resolve_options(o);
  ASSERT_TRUE(r) << r.error().msg;
  EXPECT_EQ(r->creds.access_key, "AKIDP");
  // Nothing anywhere.
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  ::setenv("AWS_PROFILE", "nope", 1);
  EXPECT_FALSE(find_credentials({}));
  // A broken profile is an error, not a silent fall-through.
  write("credentials", "[p]\naws_access_key_id = AKIDP\n");
  ::setenv("AWS_PROFILE", "p", 1);
  EXPECT_EQ(find_credentials({}).error().code, ErrorCode::kBadRequest);
}

TEST_F(CredentialEnv, PlainHttpEndpointOnlyOnLoopbackOrTheAgent) {
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds", 1);
  EXPECT_FALSE(find_credentials({}));
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "https://10.1.2.3/creds", 1);
  EXPECT_TRUE(find_credentials({}));
  ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  ::setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc", 1);
  auto s = find_credentials({});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->container, "http://169.254.170.2/v2/credentials/abc");
}

// The endpoint, live: keys fetched once, used for every request while fresh,
// fetched again once less than kRefreshAheadMs remain (the server hands out
// keys living kRefreshAheadMs + 2 s), the token file read at each fetch.
class ContainerEndpoint : public CredentialEnv {
 protected:
  void SetUp() override {
    CredentialEnv::SetUp();
    if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "no node";
    port_ = t::pick_free_port(41000, 50000);
    ASSERT_GT(port_, 0);
    pid_ = t::spawn_child({"node", std::string(PARLEY_DYNAMODB_TEST_DIR) + "/creds_server.mjs",
                           std::to_string(port_), "agent-token-1", std::to_string(kRefreshAheadMs / 1000 + 2)},
                          t::SpawnOptions{dir_ + "/server.log"});
    ASSERT_TRUE(t::wait_child_ready(pid_, 10000, 50, [this] {
      return t::read_file(dir_ + "/server.log").find("creds server ready") != std::string::npos;
    })) << t::read_file(dir_ + "/server.log");
    ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", ("http://127.0.0.1:" + std::to_string(port_) + "/creds").c_str(),
             1);
    ::setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", write("token", "agent-token-1\n").c_str(), 1);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      t::wait_child_exit(pid_, 5s);
    }
    CredentialEnv::TearDown();
  }
  DynamoClient client() {
    DynamoOptions o;
    o.region = "us-east-1";
    o.endpoint = "http://127.0.0.1:" + std::to_string(port_);
    o.timeout_ms = 2000;
    auto r = resolve_options(o);
    EXPECT_TRUE(r) << r.error().msg;
    return DynamoClient(*r);
  }
  struct Stats {
    int fetches = -1, unauthorized = -1;
    std::vector<std::pair<std::string, std::string>> requests;  // key id, token
  };
  Stats stats() {
    HttpClient http(*parse_endpoint("http://127.0.0.1:" + std::to_string(port_)), 2000);
    auto r = http.send("GET", "/stats", {}, {});
    Stats s;
    if (!r) return s;
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    if (p.parse(r->body).get(doc)) return s;
    int64_t n = 0;
    if (!doc["fetches"].get_int64().get(n)) s.fetches = static_cast<int>(n);
    if (!doc["unauthorized"].get_int64().get(n)) s.unauthorized = static_cast<int>(n);
    simdjson::dom::array requests;
    if (doc["requests"].get_array().get(requests)) return s;
    for (auto q : requests) {
      std::string_view key, token;
      if (q["key"].get_string().get(key) || q["token"].get_string().get(token)) continue;
      s.requests.emplace_back(std::string(key), std::string(token));
    }
    return s;
  }
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(ContainerEndpoint, KeysAreFetchedAgainBeforeTheyExpire) {
  DynamoClient c = client();
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  Stats s = stats();
  EXPECT_EQ(s.fetches, 1);  // not once per request
  ASSERT_EQ(s.requests.size(), 2u);
  EXPECT_EQ(s.requests[0], std::make_pair(std::string("AKIDCONTAINER1"), std::string("token1")));
  EXPECT_EQ(s.requests[1], s.requests[0]);
  // The keys enter their last kRefreshAheadMs: the next request is signed with new ones.
  std::this_thread::sleep_for(2500ms);
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  s = stats();
  EXPECT_EQ(s.fetches, 2);
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[2], std::make_pair(std::string("AKIDCONTAINER2"), std::string("token2")));
  EXPECT_EQ(s.unauthorized, 0);
}

TEST_F(ContainerEndpoint, AFailedRefetchKeepsKeysThatAreStillValid) {
  DynamoClient c = client();
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  HttpClient http(*parse_endpoint("http://127.0.0.1:" + std::to_string(port_)), 2000);
  ASSERT_TRUE(http.send("POST", "/fail?n=1", {}, {}));
  std::this_thread::sleep_for(2500ms);
  // The refetch fails (500): the old keys, still valid for ~5 minutes, sign on.
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  Stats s = stats();
  ASSERT_EQ(s.requests.size(), 2u);
  EXPECT_EQ(s.requests[1].first, "AKIDCONTAINER1");
  // Tried again a second later, and it works.
  std::this_thread::sleep_for(1100ms);
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  s = stats();
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[2].first, "AKIDCONTAINER2");
}

TEST_F(ContainerEndpoint, TheTokenFileIsReadAtEachFetch) {
  write("token", "stale-token");
  DynamoClient c = client();
  auto r = c.call("DescribeTable", "{}");
  ASSERT_FALSE(r);  // 401: no keys, nothing signed
  EXPECT_NE(r.error().msg.find("401"), std::string::npos) << r.error().msg;
  Stats s = stats();
  EXPECT_EQ(s.unauthorized, 1);
  EXPECT_TRUE(s.requests.empty());
  write("token", "agent-token-1");  // the agent rotated it back
  std::this_thread::sleep_for(1100ms);
  ASSERT_TRUE(c.call("DescribeTable", "{}"));
  EXPECT_EQ(stats().requests.at(0).first, "AKIDCONTAINER1");
}

}  // namespace
}  // namespace parley::store::dynamodb
