// The HTTP API of PROTOCOL.md ("HTTP API"): publish, send, history,
// presence, their errors and statuses, /healthz and /metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr const char* kLimitedApiKey = "key-limited";
constexpr const char* kLimitedBatchApiKey = "key-limited-batch";

class HttpApiTest : public SharedServerTest<HttpApiTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml() +
                             "\n[tenants.limited]\n"
                             "secret = \"test-secret-limited-0123456789abcdef\"\n"
                             "api_key = \"" + kLimitedApiKey + "\"\npublish_per_sec = 2\n" +
                             "\n[tenants.limited-batch]\n"
                             "secret = \"test-secret-limited-batch-0123456789\"\n"
                             "api_key = \"" + kLimitedBatchApiKey + "\"\npublish_per_sec = 2\n");
  }

 protected:
  static uint16_t port() { return server_->http_port(); }

  static HttpResult post(const std::string& path, const std::string& body,
                         const std::string& key = kDemoApiKey) {
    return http_request(port(), "POST", path, body, key);
  }
  static HttpResult get(const std::string& target, const std::string& key = kDemoApiKey) {
    return http_request(port(), "GET", target, "", key);
  }

  static void expect_error(const HttpResult& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(json_str(r.body, "code"), code) << r.body;
    EXPECT_TRUE(json_str(r.body, "msg").has_value()) << r.body;
  }
};

// ---- POST /v1/publish ----

TEST_F(HttpApiTest, PublishAnswersSeqAndDup) {
  auto r = post("/v1/publish", R"({"ch":"chat:http-seq","id":"s1","body":{"x":1}})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"seq":1,"dup":false})");
  r = post("/v1/publish", R"({"ch":"chat:http-seq","id":"s2","body":{"x":2}})");
  EXPECT_EQ(r.body, R"({"seq":2,"dup":false})");
}

TEST_F(HttpApiTest, PublishedMessageIsDeliveredFromServer) {
  auto c = connect_as("alice");
  c->join("chat:http-from");
  ASSERT_EQ(post("/v1/publish", R"({"ch":"chat:http-from","id":"s1","body":{"x":1}})").status, 200);
  auto m = c->expect("msg");
  EXPECT_EQ(json_str(m, "ch"), "chat:http-from") << m;
  EXPECT_EQ(json_int(m, "seq"), 1);
  EXPECT_EQ(json_str(m, "from"), "server");
  EXPECT_EQ(json_str(m, "id"), "s1");
  EXPECT_EQ(json_raw(m, "body"), R"({"x":1})");
  EXPECT_TRUE(json_int(m, "ts").has_value());
}

TEST_F(HttpApiTest, PublishWithARepeatedIdIsADuplicateAndNotDeliveredAgain) {
  auto c = connect_as("alice");
  c->join("chat:http-dup");
  ASSERT_EQ(post("/v1/publish", R"({"ch":"chat:http-dup","id":"s1","body":1})").body,
            R"({"seq":1,"dup":false})");
  EXPECT_EQ(post("/v1/publish", R"({"ch":"chat:http-dup","id":"s1","body":1})").body,
            R"({"seq":1,"dup":true})");
  ASSERT_EQ(post("/v1/publish", R"({"ch":"chat:http-dup","id":"s2","body":2})").body,
            R"({"seq":2,"dup":false})");
  EXPECT_EQ(json_int(c->expect("msg"), "seq"), 1);
  EXPECT_EQ(json_int(c->expect("msg"), "seq"), 2) << "the duplicate was delivered";
}

TEST_F(HttpApiTest, PublishWithoutIdIsNeverADuplicate) {
  EXPECT_EQ(post("/v1/publish", R"({"ch":"chat:http-noid","body":1})").body,
            R"({"seq":1,"dup":false})");
  EXPECT_EQ(post("/v1/publish", R"({"ch":"chat:http-noid","body":1})").body,
            R"({"seq":2,"dup":false})");
}

TEST_F(HttpApiTest, PublishSharesTheSeqCounterWithClientPublishes) {
  auto c = connect_as("alice");
  c->join("chat:http-mixed");
  c->send(R"({"op":"pub","ch":"chat:http-mixed","id":"c1","body":1,"rid":1})");
  ASSERT_EQ(json_int(c->expect("ack"), "seq"), 1);
  EXPECT_EQ(post("/v1/publish", R"({"ch":"chat:http-mixed","id":"s1","body":2})").body,
            R"({"seq":2,"dup":false})");
}

// ---- POST /v1/send ----

TEST_F(HttpApiTest, SendReachesEveryConnectionOfTheUser) {
  auto d1 = connect_as("dan");
  auto d2 = connect_as("dan");
  auto r = post("/v1/send", R"({"user":"dan","body":{"gift":1}})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"delivered":2})");
  for (auto* c : {d1.get(), d2.get()}) {
    EXPECT_EQ(c->expect("direct"), R"({"op":"direct","from":"server","body":{"gift":1}})");
  }
}

TEST_F(HttpApiTest, SendReachesOnlyThatUser) {
  auto e = connect_as("erin");
  auto f = connect_as("frank");
  ASSERT_EQ(post("/v1/send", R"({"user":"erin","body":"for erin"})").body, R"({"delivered":1})");
  ASSERT_EQ(post("/v1/send", R"({"user":"frank","body":"for frank"})").body,
            R"({"delivered":1})");
  EXPECT_EQ(json_raw(f->expect("direct"), "body"), R"("for frank")");
  EXPECT_EQ(json_raw(e->expect("direct"), "body"), R"("for erin")");
}

TEST_F(HttpApiTest, SendToAUserWithoutConnectionsDeliversNothing) {
  EXPECT_EQ(post("/v1/send", R"({"user":"nobody-here","body":1})").body, R"({"delivered":0})");
}

TEST_F(HttpApiTest, SendWithoutUserIsBadRequest) {
  expect_error(post("/v1/send", R"({"body":1})"), 400, "bad_request");
}

// ---- batched bodies (protocol-notes.md "HTTP API") ----

TEST_F(HttpApiTest, APublishBatchIsSequencedInArrayOrderAndAnsweredPerElement) {
  auto c = connect_as("batch-reader");
  c->join("chat:http-batch");
  std::string body = "\n [";
  for (int i = 0; i < 200; ++i) {
    body += (i ? "," : "") + std::string(R"({"ch":"chat:http-batch","id":"b)") +
            std::to_string(i) + R"(","body":{"i":)" + std::to_string(i) + "}}";
  }
  body += R"(,{"ch":"chat:http-batch-2","body":1.50},{"ch":"chat:http-batch","id":"b7","body":7}])";
  auto r = post("/v1/publish", body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto items = json_array_items(r.body);
  ASSERT_EQ(items.size(), 202u) << r.body;
  for (int i = 0; i < 200; ++i) EXPECT_EQ(items[i], R"({"seq":)" + std::to_string(i + 1) + R"(,"dup":false})");
  EXPECT_EQ(items[200], R"({"seq":1,"dup":false})");  // another channel, its own seqs
  EXPECT_EQ(items[201], R"({"seq":8,"dup":true})");   // b7 again: deduplicated
  // The member sees them in seq order, each body as written, b7 once.
  for (int i = 0; i < 200; ++i) {
    auto m = c->expect("msg");
    ASSERT_EQ(json_int(m, "seq"), i + 1) << m;
    EXPECT_EQ(json_raw(m, "body"), R"({"i":)" + std::to_string(i) + "}");
    EXPECT_EQ(json_str(m, "from"), "server");
  }
  EXPECT_EQ(c->expect("msg", std::chrono::milliseconds(300)), "");
}

TEST_F(HttpApiTest, ABatchWithOneBadElementPublishesNothingAndNamesIt) {
  auto c = connect_as("batch-bad-reader");
  c->join("chat:http-batch-bad");
  auto r = post("/v1/publish", R"([{"ch":"chat:http-batch-bad","body":1},{"ch":"chat:http-batch-bad"}])");
  expect_error(r, 400, "bad_request");
  EXPECT_EQ(json_str(r.body, "msg"), "[1]: missing body") << r.body;
  expect_error(post("/v1/publish", "[]"), 400, "bad_request");
  expect_error(post("/v1/publish", "[1]"), 400, "bad_request");
  expect_error(post("/v1/publish", R"([{"ch":"chat:x","body":1})"), 400, "bad_request");
  std::string big = "[";
  for (int i = 0; i < 1001; ++i) big += std::string(i ? "," : "") + "{}";
  expect_error(post("/v1/publish", big + "]"), 400, "bad_request");
  EXPECT_EQ(c->expect("msg", std::chrono::milliseconds(300)), "");
  // The channel's seqs start at 1: nothing of the failed batches was written.
  EXPECT_EQ(post("/v1/publish", R"({"ch":"chat:http-batch-bad","body":1})").body,
            R"({"seq":1,"dup":false})");
}

TEST_F(HttpApiTest, ABatchOverTheTenantsRateIsRefusedPerElement) {
  // publish_per_sec = 2, so a bucket of 2.
  auto r = post("/v1/publish", R"([{"ch":"chat:rl","body":1},{"ch":"chat:rl","body":2},{"ch":"chat:rl","body":3}])",
                kLimitedBatchApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  auto items = json_array_items(r.body);
  ASSERT_EQ(items.size(), 3u) << r.body;
  EXPECT_EQ(items[0], R"({"seq":1,"dup":false})");
  EXPECT_EQ(items[1], R"({"seq":2,"dup":false})");
  EXPECT_EQ(json_str(items[2], "code"), "rate_limited") << items[2];
  EXPECT_GT(json_int(items[2], "retry_ms").value_or(0), 0) << items[2];
}

TEST_F(HttpApiTest, ASendBatchReachesUsersAndConnectionsInOrder) {
  auto g1 = Client::connect(port());
  const std::string conn = json_str(g1->hello(server_->token("gina")), "conn").value_or("");
  auto g2 = connect_as("gina");
  auto h = connect_as("hank");
  auto r = post("/v1/send", R"([{"user":"gina","body":1},{"conn":")" + conn +
                                R"(","body":2},{"user":"hank","body":3},{"user":"nobody-here","body":4},{"user":"hank","body":5}])");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"([{"delivered":2},{"delivered":1},{"delivered":1},{"delivered":0},{"delivered":1}])");
  EXPECT_EQ(json_raw(g1->expect("direct"), "body"), "1");
  EXPECT_EQ(json_raw(g1->expect("direct"), "body"), "2");
  EXPECT_EQ(json_raw(g2->expect("direct"), "body"), "1");
  EXPECT_EQ(json_raw(h->expect("direct"), "body"), "3");
  EXPECT_EQ(json_raw(h->expect("direct"), "body"), "5");
  EXPECT_EQ(g2->expect("direct", std::chrono::milliseconds(300)), "");
  // A malformed conn fails the whole batch before anything is sent.
  expect_error(post("/v1/send", R"([{"user":"hank","body":6},{"conn":"nope","body":7}])"), 400,
               "bad_request");
  EXPECT_EQ(h->expect("direct", std::chrono::milliseconds(300)), "");
}

// ---- GET /v1/history ----

class HttpHistoryTest : public HttpApiTest {
 protected:
  static void SetUpTestSuite() {
    HttpApiTest::SetUpTestSuite();
    for (int i = 1; i <= 60; ++i) {
      post("/v1/publish", R"({"ch":"chat:http-hist","id":"h)" + std::to_string(i) +
                              R"(","body":)" + std::to_string(i) + "}");
    }
  }
};

TEST_F(HttpHistoryTest, AfterReturnsOldestFirstWithTheDefaultLimitOf50) {
  auto r = get("/v1/history?ch=chat:http-hist&after=0");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(msg_seqs(r.body), seq_range(1, 50));
}

TEST_F(HttpHistoryTest, AfterHonoursLimit) {
  EXPECT_EQ(msg_seqs(get("/v1/history?ch=chat:http-hist&after=5&limit=2").body),
            seq_range(6, 7));
}

TEST_F(HttpHistoryTest, BeforeReturnsTheNewestBelowItOldestFirst) {
  EXPECT_EQ(msg_seqs(get("/v1/history?ch=chat:http-hist&before=61&limit=3").body),
            seq_range(58, 60));
}

TEST_F(HttpHistoryTest, MessagesAreMsgObjects) {
  auto r = get("/v1/history?ch=chat:http-hist&after=0&limit=1");
  auto m = json_raw(r.body, "msgs").value_or("[]");
  m = m.substr(1, m.size() - 2);
  EXPECT_EQ(op_of(m), "msg") << r.body;
  EXPECT_EQ(json_str(m, "ch"), "chat:http-hist");
  EXPECT_EQ(json_int(m, "seq"), 1);
  EXPECT_EQ(json_str(m, "from"), "server");
  EXPECT_EQ(json_str(m, "id"), "h1");
  EXPECT_EQ(json_raw(m, "body"), "1");
}

TEST_F(HttpHistoryTest, OfAnEmptyChannelIsEmpty) {
  auto r = get("/v1/history?ch=chat:http-none&after=0");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"msgs":[]})");
}

TEST_F(HttpHistoryTest, WithoutAfterOrBeforeIsBadRequest) {
  expect_error(get("/v1/history?ch=chat:http-hist"), 400, "bad_request");
}

TEST_F(HttpHistoryTest, WithABadChannelIsBadRequest) {
  expect_error(get("/v1/history?ch=bad%20name!&after=0"), 400, "bad_request");
}

// ---- GET /v1/presence ----

TEST_F(HttpApiTest, PresenceListsTheUsersOfAChannel) {
  auto a = connect_as("alice");
  a->join("world:http-pres");
  EXPECT_EQ(get("/v1/presence?ch=world:http-pres").body, R"({"members":["alice"]})");
  auto a2 = connect_as("alice");
  a2->join("world:http-pres");
  EXPECT_EQ(get("/v1/presence?ch=world:http-pres").body, R"({"members":["alice"]})")
      << "one entry per user";
}

TEST_F(HttpApiTest, PresenceOfAnEmptyChannelIsEmpty) {
  auto r = get("/v1/presence?ch=world:http-empty");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"members":[]})");
}

TEST_F(HttpApiTest, PresenceWithABadChannelIsBadRequest) {
  expect_error(get("/v1/presence?ch="), 400, "bad_request");
}

// ---- authentication ----

TEST_F(HttpApiTest, RequestsWithoutAKeyAreUnauthorized) {
  expect_error(post("/v1/publish", R"({"ch":"chat:x","body":1})", ""), 401, "unauthorized");
  expect_error(post("/v1/send", R"({"user":"u","body":1})", ""), 401, "unauthorized");
  expect_error(get("/v1/history?ch=chat:x&after=0", ""), 401, "unauthorized");
  expect_error(get("/v1/presence?ch=chat:x", ""), 401, "unauthorized");
}

TEST_F(HttpApiTest, RequestsWithAnUnknownKeyAreUnauthorized) {
  expect_error(post("/v1/publish", R"({"ch":"chat:x","body":1})", "key-wrong"), 401,
               "unauthorized");
  expect_error(get("/v1/history?ch=chat:x&after=0", "key-wrong"), 401, "unauthorized");
}

// ---- request errors ----

TEST_F(HttpApiTest, PublishOfInvalidJsonIsBadRequest) {
  expect_error(post("/v1/publish", "{not json"), 400, "bad_request");
}

TEST_F(HttpApiTest, PublishOfANonObjectIsBadRequest) {
  expect_error(post("/v1/publish", R"(["chat:x",1])"), 400, "bad_request");
}

TEST_F(HttpApiTest, PublishWithoutBodyIsBadRequest) {
  expect_error(post("/v1/publish", R"({"ch":"chat:x"})"), 400, "bad_request");
}

TEST_F(HttpApiTest, PublishToABadChannelIsBadRequest) {
  expect_error(post("/v1/publish", R"({"ch":"bad name!","body":1})"), 400, "bad_request");
  expect_error(post("/v1/publish", R"({"body":1})"), 400, "bad_request");
}

TEST_F(HttpApiTest, PublishOfABodyOverMaxMessageBytesIsTooLarge) {
  // demo keeps the default max_message_bytes of 64 KiB.
  const std::string body = "\"" + std::string(70 * 1024, 'x') + "\"";
  expect_error(post("/v1/publish", R"({"ch":"chat:x","body":)" + body + "}"), 413, "too_large");
}

TEST_F(HttpApiTest, RequestOverFourTimesMaxMessageBytesIsTooLarge) {
  const std::string body = "\"" + std::string(300 * 1024, 'x') + "\"";
  expect_error(post("/v1/publish", R"({"ch":"chat:x","body":)" + body + "}"), 413, "too_large");
}

TEST_F(HttpApiTest, PublishOverTheTenantRateIsRateLimited) {
  // Tenant "limited": publish_per_sec = 2, a burst of 2.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(post("/v1/publish", R"({"ch":"chat:x","body":1})", kLimitedApiKey).status, 200);
  }
  auto r = post("/v1/publish", R"({"ch":"chat:x","body":1})", kLimitedApiKey);
  expect_error(r, 429, "rate_limited");
  EXPECT_GT(json_int(r.body, "retry_ms").value_or(0), 0) << r.body;
}

// ---- health and metrics ----

TEST_F(HttpApiTest, HealthzAnswers200WithoutAuth) {
  EXPECT_EQ(get("/healthz", "").status, 200);
}

TEST_F(HttpApiTest, MetricsHasTheAckHistogram) {
  auto c = connect_as("alice");
  c->join("chat:metrics");
  c->send(R"({"op":"pub","ch":"chat:metrics","id":"m1","body":1,"rid":1})");
  ASSERT_FALSE(c->expect("ack").empty());
  auto r = get("/metrics", "");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("# TYPE parley_ack_seconds histogram\n"), std::string::npos);
  EXPECT_NE(r.body.find("\nparley_ack_seconds_bucket{le=\"+Inf\"} "), std::string::npos);
  EXPECT_NE(r.body.find("\nparley_ack_seconds_sum "), std::string::npos);
  const std::string count = "\nparley_ack_seconds_count ";
  const auto at = r.body.find(count);
  ASSERT_NE(at, std::string::npos) << r.body.substr(0, 2000);
  EXPECT_GE(std::stoll(r.body.substr(at + count.size())), 1) << "the pub above was acked";
}

TEST_F(HttpApiTest, MetricsCountsConnectionsByTenant) {
  auto c = connect_as("alice");
  auto r = get("/metrics", "");
  const std::string series = "\nparley_connections{tenant=\"demo\"} ";
  const auto at = r.body.find(series);
  ASSERT_NE(at, std::string::npos) << r.body.substr(0, 2000);
  EXPECT_GE(std::stoll(r.body.substr(at + series.size())), 1);
}

}  // namespace
}  // namespace parley::testing
