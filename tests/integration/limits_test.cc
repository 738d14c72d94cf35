// Limits of PROTOCOL.md ("Errors"): rate_limited, quota_exceeded and
// backpressure with their effect on the connection, and their count in /metrics.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "auth/jwt.h"
#include "common/clock.h"
#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

// Tenants beyond demo and other: each has its own secret (secrets are unique).
std::string secret_of(const std::string& tenant) {
  return tenant == "demo" ? kDemoSecret : "test-secret-" + tenant + "-0123456789abcdef";
}

std::string tenant_toml(const std::string& id, const std::string& keys) {
  return "\n[tenants." + id + "]\nsecret = \"" + secret_of(id) + "\"\napi_key = \"key-" + id +
         "\"\n" + keys + "\n";
}

std::string token(const std::string& user, const std::string& tenant) {
  auth::Claims c;
  c.sub = user;
  c.tenant = tenant;
  c.exp = wall_ms() / 1000 + 3600;
  return auth::mint_hs256(c, secret_of(tenant));
}

int64_t metric(uint16_t port, const std::string& series) { return metric_value(port, series); }

class LimitsTest : public SharedServerTest<LimitsTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml() +
                             tenant_toml("connrate", "publish_per_conn_sec = 5") +
                             tenant_toml("staterate", "publish_per_conn_sec = 5") +
                             tenant_toml("tenantrate", "publish_per_sec = 5") +
                             tenant_toml("mixedrate", "publish_per_sec = 3") +
                             tenant_toml("full", "max_connections = 2") +
                             tenant_toml("fullb", "max_connections = 2") +
                             tenant_toml("fullc", "max_connections = 2") +
                             tenant_toml("narrow", "max_channels_per_conn = 2"));
  }

 protected:
  // Every tenant here but demo has its own secret (secret_of).
  static std::unique_ptr<Client> connect_as(const std::string& user, const std::string& tenant) {
    return connect_with_token(server_->http_port(), token(user, tenant));
  }

  static void pub(Client& c, const std::string& ch, int n) {
    c.send(R"({"op":"pub","ch":")" + ch + R"(","id":"m)" + std::to_string(n) + R"(","rid":)" +
           std::to_string(n) + R"(,"body":1})");
  }

  // The replies (ack or error) to pubs with rids first..last, by rid. Errors
  // are not held behind the store, so they may overtake earlier acks.
  static std::map<int, std::string> replies(Client& c, int first, int last) {
    std::map<int, std::string> out;
    while (out.size() < static_cast<size_t>(last - first + 1)) {
      auto o = c.next();
      if (!o) {
        ADD_FAILURE() << "only " << out.size() << " replies";
        break;
      }
      const auto op = op_of(*o);
      const int rid = static_cast<int>(json_int(*o, "rid").value_or(-1));
      if ((op == "ack" || op == "error") && rid >= first && rid <= last) out[rid] = *o;
    }
    return out;
  }
  static std::string reply_to(Client& c, int rid) { return replies(c, rid, rid)[rid]; }

  static void expect_open(Client& c) {
    c.send(R"({"op":"ping","rid":"alive"})");
    EXPECT_EQ(json_str(c.expect("pong"), "rid"), "alive") << "connection closed";
  }
};

// ---- rate_limited ----

TEST_F(LimitsTest, PublishOverTheConnectionRateIsRateLimitedWithRetryMs) {
  auto c = connect_as("u1", "connrate");
  c->join("chat:rate");
  for (int i = 1; i <= 6; ++i) pub(*c, "chat:rate", i);
  auto r = replies(*c, 1, 6);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(op_of(r[i]), "ack") << r[i];
  const std::string e = r[6];
  EXPECT_EQ(op_of(e), "error") << e;
  EXPECT_EQ(json_str(e, "code"), "rate_limited") << e;
  auto retry = json_int(e, "retry_ms");
  ASSERT_TRUE(retry.has_value()) << e;
  EXPECT_GT(*retry, 0);
  EXPECT_LE(*retry, 200) << "one token of 5/s";
  expect_open(*c);
}

TEST_F(LimitsTest, TheConnectionRateCountsStatesToo) {
  auto c = connect_as("u1", "staterate");
  c->join("world:rate");
  for (int i = 0; i < 5; ++i) {
    c->send(R"({"op":"state","ch":"world:rate","key":"k","body":1})");
  }
  pub(*c, "world:rate", 1);
  auto e = reply_to(*c, 1);
  EXPECT_EQ(json_str(e, "code"), "rate_limited") << e;
  EXPECT_TRUE(json_int(e, "retry_ms").has_value()) << e;
}

TEST_F(LimitsTest, TheConnectionRateIsPerConnection) {
  auto a = connect_as("u1", "connrate");
  auto b = connect_as("u1", "connrate");
  a->join("chat:per-conn");
  b->join("chat:per-conn");
  for (int i = 1; i <= 5; ++i) pub(*a, "chat:per-conn", i);
  auto r = replies(*a, 1, 5);
  for (int i = 1; i <= 5; ++i) ASSERT_EQ(op_of(r[i]), "ack") << r[i];
  pub(*b, "chat:per-conn", 6);
  EXPECT_EQ(op_of(reply_to(*b, 6)), "ack");
}

TEST_F(LimitsTest, TheTenantRateCountsPublishesOfEveryConnection) {
  auto a = connect_as("u1", "tenantrate");
  auto b = connect_as("u2", "tenantrate");
  a->join("chat:tenant-rate");
  b->join("chat:tenant-rate");
  for (int i = 1; i <= 3; ++i) pub(*a, "chat:tenant-rate", i);
  auto ra = replies(*a, 1, 3);
  for (int i = 1; i <= 3; ++i) ASSERT_EQ(op_of(ra[i]), "ack") << ra[i];
  for (int i = 4; i <= 5; ++i) pub(*b, "chat:tenant-rate", i);
  auto rb = replies(*b, 4, 5);
  for (int i = 4; i <= 5; ++i) ASSERT_EQ(op_of(rb[i]), "ack") << rb[i];
  pub(*b, "chat:tenant-rate", 6);
  auto e = reply_to(*b, 6);
  EXPECT_EQ(json_str(e, "code"), "rate_limited") << e;
  EXPECT_GT(json_int(e, "retry_ms").value_or(0), 0) << e;
  expect_open(*b);
}

TEST_F(LimitsTest, TheTenantRateCountsHttpPublishesToo) {
  auto c = connect_as("u1", "mixedrate");
  c->join("chat:mixed-rate");
  for (int i = 1; i <= 2; ++i) pub(*c, "chat:mixed-rate", i);
  auto r = replies(*c, 1, 2);
  for (int i = 1; i <= 2; ++i) ASSERT_EQ(op_of(r[i]), "ack") << r[i];
  auto ok = http_request(server_->http_port(), "POST", "/v1/publish",
                         R"({"ch":"chat:mixed-rate","body":1})", "key-mixedrate");
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto refused = http_request(server_->http_port(), "POST", "/v1/publish",
                              R"({"ch":"chat:mixed-rate","body":1})", "key-mixedrate");
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(json_str(refused.body, "code"), "rate_limited") << refused.body;
  pub(*c, "chat:mixed-rate", 3);
  EXPECT_EQ(json_str(reply_to(*c, 3), "code"), "rate_limited");
}

// ---- quota_exceeded ----

TEST_F(LimitsTest, HelloOverTheTenantsConnectionLimitIsQuotaExceededAndCloses4008) {
  auto a = connect_as("u1", "full");
  auto b = connect_as("u2", "full");
  auto c = Client::connect(server_->http_port());
  auto e = c->hello(token("u3", "full"), 5);
  EXPECT_EQ(op_of(e), "error") << e;
  EXPECT_EQ(json_str(e, "code"), "quota_exceeded") << e;
  EXPECT_EQ(json_int(e, "rid"), 5) << e;
  EXPECT_EQ(c->wait_closed(), 4008);
}

TEST_F(LimitsTest, TheConnectionLimitIsPerTenant) {
  auto a = connect_as("u1", "fullb");
  auto b = connect_as("u2", "fullb");
  auto c = Client::connect(server_->http_port());
  EXPECT_EQ(op_of(c->hello(ServerProcess::token("u3", "demo"))), "welcome");
}

TEST_F(LimitsTest, AClosedConnectionFreesItsSlot) {
  auto a = connect_as("u1", "fullc");
  {
    auto b = connect_as("u2", "fullc");
    b->close();
    b->wait_closed();
  }
  // The server learns of the close asynchronously: retry briefly.
  std::string w;
  for (int attempt = 0; attempt < 50 && op_of(w) != "welcome"; ++attempt) {
    auto c = Client::connect(server_->http_port());
    w = c->hello(token("u3", "fullc"));
    if (op_of(w) == "welcome") break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(op_of(w), "welcome") << w;
}

TEST_F(LimitsTest, JoinOverMaxChannelsPerConnIsQuotaExceededAndStaysOpen) {
  auto c = connect_as("u1", "narrow");
  c->join("chat:one");
  c->join("chat:two");
  c->send(R"({"op":"join","ch":"chat:three","rid":3})");
  auto e = c->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(op_of(*e), "error") << *e;
  EXPECT_EQ(json_str(*e, "code"), "quota_exceeded") << *e;
  EXPECT_EQ(json_int(*e, "rid"), 3) << *e;
  expect_open(*c);
}

TEST_F(LimitsTest, LeavingFreesAChannelSlot) {
  auto c = connect_as("u1", "narrow");
  c->join("chat:one");
  c->join("chat:two");
  c->send(R"({"op":"leave","ch":"chat:one"})");
  ASSERT_FALSE(c->expect("left").empty());
  EXPECT_EQ(op_of(c->join("chat:three")), "joined");
}

// ---- metrics ----

TEST_F(LimitsTest, RejectionsAreCountedByCodeInMetrics) {
  const std::string series = R"(parley_rejections_total{code="forbidden"})";
  const int64_t before = metric(server_->http_port(), series);
  ASSERT_GE(before, 0) << "no " << series << " in /metrics";
  auto c = connect_as("u1", "demo");
  c->send(R"({"op":"pub","ch":"chat:not-joined","id":"m","body":1,"rid":1})");
  ASSERT_EQ(json_str(c->expect("error"), "code"), "forbidden");
  EXPECT_EQ(metric(server_->http_port(), series), before + 1);
}

TEST_F(LimitsTest, RateLimitedRejectionsAreCountedInMetrics) {
  const std::string series = R"(parley_rejections_total{code="rate_limited"})";
  const int64_t before = metric(server_->http_port(), series);
  ASSERT_GE(before, 0);
  auto c = connect_as("u9", "connrate");
  c->join("chat:rate-metric");
  for (int i = 1; i <= 6; ++i) pub(*c, "chat:rate-metric", i);
  ASSERT_EQ(json_str(replies(*c, 1, 6)[6], "code"), "rate_limited");
  EXPECT_EQ(metric(server_->http_port(), series), before + 1);
}

// ---- backpressure ----

// The append queue of one entry makes concurrent publishes from several
// connections likely to find it full; which ones do is up to timing, so the
// test checks that every pub gets exactly one of the two answers and that
// what was acknowledged has no gaps.
TEST(BackpressureTest, EveryPubIsAckedOrRefusedWithBackpressureAndAcksAreGapFree) {
  ServerSpec spec;
  spec.server_extra = "append_queue_limit = 1";
  spec.tenants_toml = default_tenants_toml("publish_per_conn_sec = 0\npublish_per_sec = 0\n");
  ServerProcess server(spec);
  server.start();
  constexpr int kClients = 4;
  constexpr int kPubs = 100;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(Client::connect(server.http_port()));
    ASSERT_EQ(op_of(clients.back()->hello(ServerProcess::token("u" + std::to_string(i)))),
              "welcome");
    clients.back()->join("chat:pressure");
  }
  for (int n = 1; n <= kPubs; ++n) {
    for (auto& c : clients) {
      c->send(R"({"op":"pub","ch":"chat:pressure","id":"m)" + std::to_string(n) +
              R"(","rid":)" + std::to_string(n) + R"(,"body":1})");
    }
  }
  std::set<int64_t> seqs;
  int refused = 0;
  for (auto& c : clients) {
    std::set<int64_t> answered;
    int64_t last_seq = 0;
    while (answered.size() < kPubs) {
      auto o = c->next();
      ASSERT_TRUE(o.has_value()) << "only " << answered.size() << " answers";
      const auto op = op_of(*o);
      if (op != "ack" && op != "error") continue;
      const int64_t rid = json_int(*o, "rid").value_or(-1);
      EXPECT_TRUE(answered.insert(rid).second) << "two answers to rid " << rid;
      if (op == "ack") {
        const int64_t seq = json_int(*o, "seq").value_or(0);
        EXPECT_GT(seq, last_seq) << "one connection's pubs are sequenced in order";
        last_seq = seq;
        EXPECT_TRUE(seqs.insert(seq).second) << "seq " << seq << " acked twice";
      } else {
        EXPECT_EQ(json_str(*o, "code"), "backpressure") << *o;
        EXPECT_GT(json_int(*o, "retry_ms").value_or(0), 0) << *o;
        ++refused;
      }
    }
  }
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(*seqs.begin(), 1);
  EXPECT_EQ(*seqs.rbegin(), static_cast<int64_t>(seqs.size())) << "acked seqs have gaps";
  RecordProperty("backpressure_refusals", refused);
  std::cout << "backpressure refusals: " << refused << " of " << kClients * kPubs << "\n";
}

}  // namespace
}  // namespace parley::testing
