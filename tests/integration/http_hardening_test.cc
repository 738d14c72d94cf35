// The HTTP side of the main listener under hostile input (issue 11, findings
// 5, 6, 12 and 13): framing errors are answered with a status and a close,
// bodies are read only after the API key is accepted, HTTP connections past a
// request count against max_connections and idle ones go quickly, and POST /v1/publish
// validates and keeps a body exactly as the WebSocket path does.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/raw_ws.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

std::string post_head(const std::string& path, const std::string& headers,
                      const std::string& api_key = kDemoApiKey) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + api_key +
         "\r\nContent-Type: application/json\r\n" + headers + "\r\n";
}

// The value of one sample line of /metrics, or -1 (also when refused).
int64_t metric(uint16_t port, const std::string& series) {
  HttpResult r;
  try {
    r = http_request(port, "GET", "/metrics");
  } catch (const std::exception&) {
    return -1;
  }
  const std::string needle = "\n" + series + " ";
  auto at = r.body.find(needle);
  if (at == std::string::npos) return -1;
  return std::stoll(r.body.substr(at + needle.size()));
}

class HttpHardeningTest : public SharedServerTest<HttpHardeningTest> {
 protected:
  static uint16_t port() { return server_->http_port(); }

  // Sends `request` on a fresh connection; expects `status` and then a close.
  static void expect_status_and_close(const std::string& request, int status) {
    auto c = RawWs::connect(port());
    auto head = c->http(request, 3s);
    ASSERT_TRUE(head.has_value()) << "dropped without a status";
    EXPECT_EQ(head->status, status) << head->body;
    EXPECT_TRUE(c->wait_eof(3s)) << "the connection stayed open";
  }
};

// ---- finding 13: framing ----

TEST_F(HttpHardeningTest, TransferEncodingThatIsNotChunkedIsAnswered400) {
  const std::string body = R"({"ch":"chat:te","body":1})";
  expect_status_and_close(post_head("/v1/publish", "Transfer-Encoding: xchunked\r\nContent-Length: " +
                                                       std::to_string(body.size()) + "\r\n") +
                              body,
                          400);
  expect_status_and_close(post_head("/v1/publish", "Content-Length: " + std::to_string(body.size()) +
                                                       "\r\nTransfer-Encoding: xchunked\r\n") +
                              body,
                          400);
  EXPECT_TRUE(http_history_all(port(), "chat:te").empty()) << "a smuggled request was served";
}

TEST_F(HttpHardeningTest, TransferEncodingWithContentLengthIsAnswered400) {
  expect_status_and_close(
      post_head("/v1/publish", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") + "0\r\n\r\n",
      400);
}

TEST_F(HttpHardeningTest, TwoDifferentContentLengthsAreAnswered400) {
  expect_status_and_close(
      post_head("/v1/publish", "Content-Length: 3\r\nContent-Length: 25\r\n") +
          R"({"ch":"chat:cl","body":1})",
      400);
}

TEST_F(HttpHardeningTest, HeaderFloodIsAnswered431) {
  std::string headers;
  for (int i = 0; i < 2000; ++i) headers += "X-Flood-" + std::to_string(i) + ": y\r\n";
  expect_status_and_close("GET /healthz HTTP/1.1\r\nHost: a\r\n" + headers + "\r\n", 431);
}

TEST_F(HttpHardeningTest, HundredKilobyteHeaderIsAnswered431) {
  expect_status_and_close(
      "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(100 * 1024, 'b') + "\r\n\r\n",
      431);
}

TEST_F(HttpHardeningTest, ChunkedPublishIsServed) {
  const std::string body = R"({"ch":"chat:chunked","id":"c1","body":{"a":1}})";
  char size[16];
  snprintf(size, sizeof size, "%zx", body.size());
  auto c = RawWs::connect(port());
  auto head = c->http(post_head("/v1/publish", "Transfer-Encoding: chunked\r\n") + size + "\r\n" +
                      body + "\r\n0\r\n\r\n");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200) << head->body;
}

// ---- finding 5: bodies only after the key ----

TEST_F(HttpHardeningTest, WrongApiKeyIsAnsweredBeforeTheBodyIsSent) {
  // Only the header of a 200 KB POST: the 401 used to wait for the whole body.
  auto c = RawWs::connect(port());
  auto head = c->http(post_head("/v1/publish", "Content-Length: 200000\r\n", "key-wrong"), 3s);
  ASSERT_TRUE(head.has_value()) << "no answer before the body";
  EXPECT_EQ(head->status, 401) << head->body;
  EXPECT_TRUE(c->wait_eof(3s));
}

TEST_F(HttpHardeningTest, UnknownPathIsAnsweredBeforeTheBodyIsSent) {
  auto c = RawWs::connect(port());
  auto head = c->http(post_head("/v1/nope", "Content-Length: 200000\r\n"), 3s);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 404);
}

// One 404 body for every path nothing serves (net::not_found, issue 22): the
// HTTP API's, the admin API's when it is off, a WebSocket upgrade's.
TEST_F(HttpHardeningTest, EveryUnknownPathHasTheOneNotFoundBody) {
  constexpr std::string_view kBody = R"({"code":"bad_request","msg":"not found"})";
  for (const char* path : {"/nope", "/v1/nope", "/admin", "/admin/api/stats"}) {
    const HttpResult r = http_request(port(), "GET", path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body, kBody) << path;
  }
  auto c = RawWs::connect(port());
  auto head = c->http(RawWs::upgrade_request("/elsewhere"), 3s);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 404);
  EXPECT_EQ(head->body, kBody);
}

TEST_F(HttpHardeningTest, BodyOnAPathWithoutAuthIsNotRead) {
  // /healthz and /metrics need no key, so they take no body either.
  auto c = RawWs::connect(port());
  auto head = c->http("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 200000\r\n\r\n", 3s);
  ASSERT_TRUE(head.has_value()) << "no answer before the body";
  EXPECT_EQ(head->status, 413);
}

TEST_F(HttpHardeningTest, BodyOverFourTimesTheTenantsLimitIsRefusedFromContentLength) {
  auto c = RawWs::connect(port());
  auto head = c->http(post_head("/v1/publish", "Content-Length: 300000\r\n"), 3s);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 413);
}

// ---- finding 12: one validation, one raw body ----

TEST_F(HttpHardeningTest, PublishedBodyIsKeptAsWritten) {
  // docs/protocol-notes.md: numbers and escapes as the client wrote them.
  // (Compared as text: the test's JSON helpers would re-serialize it too.)
  const std::string body = R"({"n":1.50,"e":1e2,"s":"\u00e9\n","big":12345678901234567890})";
  auto r = http_request(port(), "POST", "/v1/publish",
                        R"({"ch":"chat:raw-body","id":"r1","body": )" + body + "}", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  auto h = http_request(port(), "GET", "/v1/history?ch=chat:raw-body&after=0", "", kDemoApiKey);
  EXPECT_NE(h.body.find(R"("body":)" + body + "}"), std::string::npos) << h.body;
}

TEST_F(HttpHardeningTest, IdLengthCountsCharactersAsOnTheWebSocket) {
  std::string e64;
  for (int i = 0; i < 64; ++i) e64 += "\xC3\xA9";  // 64 chars, 128 bytes
  auto r = http_request(port(), "POST", "/v1/publish",
                        R"({"ch":"chat:id-len","id":")" + e64 + R"(","body":1})", kDemoApiKey);
  EXPECT_EQ(r.status, 200) << r.body;
  r = http_request(port(), "POST", "/v1/publish",
                   R"({"ch":"chat:id-len","id":")" + e64 + R"(x","body":1})", kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
  r = http_request(port(), "POST", "/v1/publish", R"({"ch":"chat:id-len","id":"","body":1})",
                   kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST_F(HttpHardeningTest, DuplicateFieldsAreBadRequestAsOnTheWebSocket) {
  auto r = http_request(port(), "POST", "/v1/publish",
                        R"({"ch":"chat:dup-a","ch":"chat:dup-b","body":1})", kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json_str(r.body, "code"), "bad_request");
  r = http_request(port(), "POST", "/v1/publish", R"({"ch":"chat:dup-a","body":1,"body":2})",
                   kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
  r = http_request(port(), "POST", "/v1/send", R"({"user":"a","user":"b","body":1})", kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST_F(HttpHardeningTest, ControlCharactersInIdOrUserAreBadRequest) {
  auto r = http_request(port(), "POST", "/v1/publish", R"({"ch":"chat:ctl","id":"a\u0000b","body":1})",
                        kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
  r = http_request(port(), "POST", "/v1/send", R"({"user":"a\u0000b","body":1})", kDemoApiKey);
  EXPECT_EQ(r.status, 400) << r.body;
}

// ---- finding 6: HTTP connections are counted and idle ones go ----

TEST(HttpConnectionsTest, IdleConnectionThatSendsNothingIsClosedAfterTheIdleTimeout) {
  ServerSpec spec;
  spec.server_extra = "http_idle_timeout_ms = 300";
  ServerProcess server(spec);
  server.start();
  auto c = RawWs::connect(server.http_port());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c->wait_eof(5s)) << "still open after 5 s";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(HttpConnectionsTest, HttpConnectionsPastARequestCountAgainstMaxConnections) {
  // An HTTP connection takes a max_connections slot with its first whole
  // request (before, it is one of the unauthenticated sockets, counted apart:
  // front_door_test).
  ServerSpec spec;
  spec.server_extra = "max_connections = 4\nhttp_idle_timeout_ms = 60000\nthreads = 1";
  ServerProcess server(spec);
  server.start();
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::vector<std::unique_ptr<RawWs>> kept;
  for (int i = 0; i < 4; ++i) {
    kept.push_back(RawWs::connect(server.http_port()));
    auto head = kept.back()->http(healthz, 2s);
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(head->status, 200);
  }
  // All four slots are held by keep-alive HTTP connections: a fifth request
  // is answered 503 and a WebSocket's hello quota_exceeded.
  auto fifth = RawWs::connect(server.http_port());
  auto refused = fifth->http(healthz, 2s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_TRUE(fifth->wait_eof(2s));
  auto ws = RawWs::open(server.http_port());
  auto no = ws->hello(ServerProcess::token("late"));
  EXPECT_EQ(json_str(no, "code"), "quota_exceeded") << no;
  kept.clear();
  // Slots come back when the HTTP connections go.
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    auto again = Client::connect(server.http_port());
    served = op_of(again->hello(ServerProcess::token("again"))) == "welcome";
    if (!served) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(served);
  // And they are in /metrics: two kept ones plus the scrape's own.
  for (int i = 0; i < 2; ++i) {
    kept.push_back(RawWs::connect(server.http_port()));
    ASSERT_TRUE(kept.back()->http(healthz, 2s).has_value());
  }
  int64_t http = -1;
  for (int i = 0; i < 100 && http != 3; ++i) {
    http = metric(server.http_port(), "parley_http_connections");
    if (http != 3) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(http, 3);
}

}  // namespace
}  // namespace parley::testing
