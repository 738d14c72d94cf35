// /admin and /admin/api/stats over real sockets: off without server.admin_key,
// the key as a bearer header only, and stats that follow what clients do
// (per-tenant rejections, the busiest channels). The page itself is driven in
// Chromium by tests/admin/admin_page_test.mjs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr const char* kAdminKey = "admin-key-of-the-test-0123456789";

uint64_t u64(simdjson::dom::element e) { return uint64_t(e); }

TEST(AdminApiOff, EveryAdminPathIsNotFoundWithoutAKey) {
  ServerProcess server;
  server.start();
  for (const char* path : {"/admin", "/admin/", "/admin/admin.js", "/admin/api/stats"}) {
    EXPECT_EQ(http_request(server.http_port(), "GET", path, "", kAdminKey).status, 404) << path;
  }
}

class AdminApiTest : public SharedServerTest<AdminApiTest> {
 public:
  static ServerSpec server_spec() {
    ServerSpec s;
    s.server_extra = std::string("admin_key = \"") + kAdminKey + "\"";
    return s;
  }

 protected:
  static HttpResult stats(const std::string& key = kAdminKey) {
    return http_request(server_->http_port(), "GET", "/admin/api/stats", "", key);
  }
};

TEST_F(AdminApiTest, StatsWantTheKeyAsABearerHeader) {
  EXPECT_EQ(stats("").status, 401);
  EXPECT_EQ(stats("admin-key-of-the-test-012345678X").status, 401);
  EXPECT_EQ(stats(kDemoApiKey).status, 401);  // a tenant's API key is not the admin key
  // In the query string it is ignored: still 401.
  EXPECT_EQ(http_request(server_->http_port(), "GET",
                         std::string("/admin/api/stats?key=") + kAdminKey).status, 401);
  const auto ok = stats();
  EXPECT_EQ(ok.status, 200);
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(ok.body).get(doc), simdjson::SUCCESS) << ok.body;
  EXPECT_EQ(doc["tenants"].get_array().size(), 2u);
  EXPECT_EQ(std::string_view(doc["store"]["kind"]), "embedded");
  EXPECT_TRUE(bool(doc["store"]["writable"]));
  EXPECT_EQ(std::string_view(doc["store"]["reason"]), "");
  EXPECT_EQ(doc["latency"]["bounds"].get_array().size(), doc["latency"]["ack"]["buckets"].get_array().size() - 1);
}

TEST_F(AdminApiTest, ThePageAndItsFilesNeedNoKeyAndAllowNoInlineScript) {
  const auto page = http_request(server_->http_port(), "GET", "/admin");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<script src=\"/admin/admin.js\""), std::string::npos);
  EXPECT_EQ(page.body.find(kAdminKey), std::string::npos);
  EXPECT_EQ(http_request(server_->http_port(), "GET", "/admin/admin.js").status, 200);
  EXPECT_EQ(http_request(server_->http_port(), "GET", "/admin/admin.css").status, 200);
  EXPECT_EQ(http_request(server_->http_port(), "GET", "/admin/other").status, 404);
  EXPECT_EQ(http_request(server_->http_port(), "POST", "/admin/api/stats", "{}", kAdminKey).status, 405);
}

TEST_F(AdminApiTest, StatsCountATenantsRejectionsAndRankItsBusiestChannel) {
  auto parse = [](simdjson::dom::parser& p, const std::string& body) {
    simdjson::dom::element doc;
    EXPECT_EQ(p.parse(body).get(doc), simdjson::SUCCESS) << body;
    return doc;
  };
  simdjson::dom::parser p0;
  auto before = parse(p0, stats().body);
  uint64_t bad_before = 0;
  for (auto t : before["tenants"]) {
    if (std::string_view(t["id"]) == "other") bad_before = u64(t["rejections"]["bad_request"]);
  }

  // One bad frame from an "other" client; 5 messages in one demo channel, 1 in another.
  auto o = ::parley::testing::connect_as(server_->http_port(), "olga", "other");
  o->send(R"({"op":"nope","rid":1})");
  ASSERT_FALSE(o->expect("error").empty());
  auto c = ::parley::testing::connect_as(server_->http_port(), "alice");
  c->join("chat:busy");
  c->join("chat:quiet");
  for (int i = 0; i < 5; ++i) {
    c->send(pub_frame("chat:busy", "b" + std::to_string(i), "{}", 10 + i));
    ASSERT_FALSE(c->expect("ack").empty());
  }
  c->send(pub_frame("chat:quiet", "q", "{}", 20));
  ASSERT_FALSE(c->expect("ack").empty());

  simdjson::dom::parser p1;
  auto after = parse(p1, stats().body);
  for (auto t : after["tenants"]) {
    if (std::string_view(t["id"]) == "other") {
      EXPECT_EQ(u64(t["rejections"]["bad_request"]), bad_before + 1);
    }
  }
  auto busiest = after["channels"]["busiest"].get_array();
  ASSERT_GE(busiest.size(), 2u);
  auto first = busiest.at(0);
  EXPECT_EQ(std::string_view(first["tenant"]), "demo");
  EXPECT_EQ(std::string_view(first["ch"]), "chat:busy");
  EXPECT_EQ(u64(first["members"]), 1u);
  EXPECT_EQ(u64(first["last_seq"]), 5u);
  // `published` counts since the previous ranking, and a channel first seen by
  // a ranking (as these two were, just now) counts from then: 3 more.
  for (int i = 0; i < 3; ++i) {
    c->send(pub_frame("chat:busy", "c" + std::to_string(i), "{}", 30 + i));
    ASSERT_FALSE(c->expect("ack").empty());
  }
  simdjson::dom::parser p2;
  auto next = parse(p2, stats().body);
  auto top = next["channels"]["busiest"].get_array().at(0);
  EXPECT_EQ(std::string_view(top["ch"]), "chat:busy");
  EXPECT_EQ(u64(top["published"]), 3u);
  EXPECT_EQ(u64(top["last_seq"]), 8u);
  EXPECT_GT(double(next["channels"]["interval_s"]), 0.0);
}

}  // namespace
}  // namespace parley::testing
