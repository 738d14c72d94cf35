// /admin and /admin/api/stats over real sockets: off without server.admin_key,
// the key as a bearer header only, and stats that follow what clients do
// (per-tenant rejections, the busiest channels, the connections sent the most
// and their encodings). The page itself is driven in
// Chromium by tests/admin/admin_page_test.mjs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

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


// A stats answer's listed connection of `user`.
std::optional<simdjson::dom::element> talker(simdjson::dom::element stats, std::string_view user) {
  for (auto c : stats["connections"]["top"]) {
    if (std::string_view(c["user"]) == user) return c;
  }
  return std::nullopt;
}

std::optional<simdjson::dom::element> form(simdjson::dom::element stats, std::string_view encoding) {
  for (auto f : stats["connections"]["by_encoding"]) {
    if (std::string_view(f["encoding"]) == encoding) return f;
  }
  return std::nullopt;
}

TEST_F(AdminApiTest, StatsListTheConnectionsSentTheMostWithTheirEncodings) {
  auto parse = [](simdjson::dom::parser& p, const std::string& body) {
    simdjson::dom::element doc;
    EXPECT_EQ(p.parse(body).get(doc), simdjson::SUCCESS) << body;
    return doc;
  };
  // A JSON member over WebSocket and a MessagePack one over TCP (hello
  // "enc":"msgpack", then MessagePack both ways) in one channel.
  auto js = ::parley::testing::connect_as(server_->http_port(), "talker-json");
  js->join("chat:talkers");
  auto mp = Client::connect(server_->tcp_port(), Wire::kTcp);
  mp->send(R"({"op":"hello","v":1,"rid":1,"enc":"msgpack","token":")" +
           ServerProcess::token("talker-mp") + "\"}");
  ASSERT_EQ(op_of(mp->expect("welcome")), "welcome");
  const size_t before_join = mp->frames();
  // {"op":"join","rid":2,"ch":"chat:talkers"}
  mp->send(std::string("\x83\xa2op\xa4join\xa3rid\x02\xa2" "ch\xac" "chat:talkers"));
  auto wait_frames = [&](size_t n) {
    for (int i = 0; i < 500 && mp->frames() < n; ++i) std::this_thread::sleep_for(10ms);
    return mp->frames() >= n;
  };
  ASSERT_TRUE(wait_frames(before_join + 1)) << "joined";
  const std::string body = R"({"text":")" + std::string(300, 'x') + "\"}";
  // The publisher's own msgs may come before or after its acks (a quiet
  // channel's msg leaves with the ack's write): count both in any order.
  int acks = 0, msgs = 0;
  for (int i = 0; i < 5; ++i) {
    js->send(pub_frame("chat:talkers", "t" + std::to_string(i), body, 40 + i));
    while (acks <= i) {
      auto o = js->next();
      ASSERT_TRUE(o) << "ack " << i;
      const std::string op = op_of(*o);
      acks += op == "ack";
      msgs += op == "msg";
    }
  }
  while (msgs < 5) {
    auto o = js->next();
    ASSERT_TRUE(o) << "msg " << msgs;
    msgs += op_of(*o) == "msg";
  }
  // A tick batch may hold several msgs: wait until nothing more comes.
  size_t seen = mp->frames();
  for (int quiet = 0; quiet < 20; ++quiet) {
    std::this_thread::sleep_for(10ms);
    if (mp->frames() != seen) {
      seen = mp->frames();
      quiet = 0;
    }
  }

  simdjson::dom::parser p1;
  auto first = parse(p1, stats().body);
  auto jo = talker(first, "talker-json");
  auto mo = talker(first, "talker-mp");
  ASSERT_TRUE(jo) << "the JSON member is listed";
  ASSERT_TRUE(mo) << "the MessagePack member is listed";
  auto j = *jo, m = *mo;
  EXPECT_EQ(std::string_view(j["encoding"]), "json");
  EXPECT_EQ(std::string_view(m["encoding"]), "msgpack");
  // Both got the 5 msgs of 300+ bytes; the JSON one its acks too, in JSON.
  EXPECT_GT(u64(m["bytes_out"]), 5u * 300u);
  EXPECT_GT(u64(j["bytes_out"]), u64(m["bytes_out"]));
  EXPECT_GT(double(m["bytes_out_per_s"]), 0.0);
  auto mf = form(first, "msgpack");
  ASSERT_TRUE(mf);
  EXPECT_GE(u64((*mf)["connections"]), 1u);
  EXPECT_GE(u64((*mf)["bytes_out"]), u64(m["bytes_out"]));

  // Rates are since the previous listing: nothing was sent to them since.
  simdjson::dom::parser p2;
  auto second = parse(p2, stats().body);
  auto m2 = talker(second, "talker-mp");
  ASSERT_TRUE(m2);
  EXPECT_EQ(u64((*m2)["bytes_out"]), u64(m["bytes_out"]));
  EXPECT_EQ(double((*m2)["bytes_out_per_s"]), 0.0);
  // /metrics has no series per connection: no user, no conn label.
  const std::string metrics = http_request(server_->http_port(), "GET", "/metrics", "", "").body;
  EXPECT_EQ(metrics.find("talker-mp"), std::string::npos);
  EXPECT_EQ(metrics.find("conn=\""), std::string::npos);
}

}  // namespace
}  // namespace parley::testing
