// Tenant changes without a restart (docs/operations.md "Reloading the config"):
// the real binary, its config file rewritten, then SIGHUP or `parley reload`
// (POST /admin/api/reload). Tenants added and removed, a secret and an api_key
// rotated with an overlap, a rate limit changed under an open connection, an
// invalid file that changes nothing, and a tenant removed while another one
// carries a publishing load that must not lose or disturb anything.
#include <gtest/gtest.h>

#include <atomic>
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

constexpr const char* kAdminKey = "reload-admin-key-0123456789";
constexpr const char* kThirdSecret = "test-secret-third-0123456789abcdef";
constexpr const char* kThirdApiKey = "key-third";
constexpr const char* kNewDemoSecret = "test-secret-demo-ROTATED-0123456789";
constexpr const char* kNewDemoApiKey = "key-demo-rotated";

std::string admin_extra() { return std::string("admin_key = \"") + kAdminKey + "\"\n"; }

std::string tenant_toml(const std::string& id, const std::string& secret, const std::string& key,
                        const std::string& extra = "") {
  return "\n[tenants." + id + "]\nsecret = \"" + secret + "\"\napi_key = \"" + key + "\"\n" +
         extra + "\n";
}

std::string mint(const std::string& user, const std::string& tenant, const std::string& secret) {
  auth::Claims c;
  c.sub = user;
  c.tenant = tenant;
  c.exp = wall_ms() / 1000 + 3600;
  return auth::mint_hs256(c, secret);
}

// `parley reload` against `server`, its address given (the file listens on port 0).
CliRun parley_reload(const ServerProcess& server) {
  return run_parley("reload --config " + server.config_path() + " --server 127.0.0.1:" +
                    std::to_string(server.http_port()));
}

// A hello that must fail: the error object.
std::string refused_hello(uint16_t port, const std::string& token) {
  auto c = Client::connect(port);
  return c->hello(token);
}

std::string publish(uint16_t port, const std::string& key, const std::string& ch) {
  return std::to_string(
      http_request(port, "POST", "/v1/publish", R"({"ch":")" + ch + R"(","body":1})", key).status);
}

// Waits (bounded) until the server's log holds `text`.
bool log_has(const ServerProcess& s, const std::string& text) {
  for (int i = 0; i < 200; ++i) {
    if (s.log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

TEST(ReloadTest, AddedTenantAcceptsConnectionsAndApiCalls) {
  ServerProcess server(spec_with_tenants(default_tenants_toml(), admin_extra()));
  server.start();
  const uint16_t port = server.http_port();
  auto demo = connect_as(port, "alice");
  demo->join("chat:keep");
  EXPECT_EQ(json_str(refused_hello(port, mint("u", "third", kThirdSecret)), "code"), "unauthorized");
  EXPECT_EQ(publish(port, kThirdApiKey, "chat:x"), "401");

  server.write_config(spec_with_tenants(
      default_tenants_toml() +
          tenant_toml("third", kThirdSecret, kThirdApiKey, "publish_per_conn_sec = 50\n") +
          "[tenants.third.namespaces.world]\ndurable = false\npresence = true\n",
      admin_extra()));
  CliRun r = parley_reload(server);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("added third"), std::string::npos) << r.output;

  auto t = connect_with_token(port, mint("bob", "third", kThirdSecret));
  auto joined = t->join("world:1");
  EXPECT_EQ(op_of(joined), "joined") << joined;
  EXPECT_EQ(json_raw(joined, "members"), R"(["bob"])") << joined;  // the new namespace's presence
  t->send(pub_frame("world:1", "m1", "{}", 7));
  EXPECT_EQ(json_int(t->expect("ack"), "seq"), 1);
  EXPECT_EQ(publish(port, kThirdApiKey, "world:1"), "200");
  // The untouched tenant's connection is still there and working.
  demo->send(pub_frame("chat:keep", "k1", "{}", 9));
  EXPECT_EQ(json_int(demo->expect("ack"), "seq"), 1);
  EXPECT_FALSE(demo->closed());
}

TEST(ReloadTest, RotatedSecretAndApiKeyOverlapThenOnlyTheNewOnesWork) {
  ServerProcess server(spec_with_tenants(default_tenants_toml()));
  server.start();
  const uint16_t port = server.http_port();
  const std::string old_token = ServerProcess::token("alice");
  const std::string new_token = mint("alice", "demo", kNewDemoSecret);
  auto before = connect_with_token(port, old_token);

  // The new secret and key, with 3 s during which the replaced ones still work.
  server.write_config(spec_with_tenants(
      tenant_toml("demo", kNewDemoSecret, kNewDemoApiKey, "rotation_overlap_s = 3\n") +
      tenant_toml("other", kOtherSecret, kOtherApiKey)));
  const int64_t reloaded_ms = wall_ms();
  server.hangup();
  // SIGHUP has no answer: wait until the new secret is taken.
  bool taken = false;
  for (int i = 0; i < 100 && !taken; ++i) {
    auto c = Client::connect(port);
    taken = op_of(c->hello(new_token)) == "welcome";
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(taken) << server.log();
  auto old_ok = Client::connect(port);
  EXPECT_EQ(op_of(old_ok->hello(old_token)), "welcome");
  EXPECT_EQ(publish(port, kDemoApiKey, "chat:rot"), "200");
  EXPECT_EQ(publish(port, kNewDemoApiKey, "chat:rot"), "200");
  ASSERT_LT(wall_ms() - reloaded_ms, 2500) << "the overlap checks ran too late to mean anything";

  std::this_thread::sleep_for(std::chrono::milliseconds(3000 - (wall_ms() - reloaded_ms) + 300));
  auto old_refused = Client::connect(port);
  auto err = old_refused->hello(old_token);
  EXPECT_EQ(json_str(err, "code"), "unauthorized") << err;
  EXPECT_EQ(old_refused->wait_closed(), 4001);
  EXPECT_EQ(publish(port, kDemoApiKey, "chat:rot"), "401");
  EXPECT_EQ(publish(port, kNewDemoApiKey, "chat:rot"), "200");
  auto new_ok = Client::connect(port);
  EXPECT_EQ(op_of(new_ok->hello(new_token)), "welcome");
  // A connection opened before the rotation is not cut by it.
  before->send(R"({"op":"ping","rid":5})");
  EXPECT_EQ(op_of(before->expect("pong")), "pong");
}

TEST(ReloadTest, RotationWithoutOverlapRefusesTheOldSecretAtOnce) {
  ServerProcess server(spec_with_tenants(default_tenants_toml(), admin_extra()));
  server.start();
  server.write_config(spec_with_tenants(tenant_toml("demo", kNewDemoSecret, kDemoApiKey) +
                                            tenant_toml("other", kOtherSecret, kOtherApiKey),
                                        admin_extra()));
  CliRun r = parley_reload(server);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("changed demo"), std::string::npos) << r.output;
  EXPECT_EQ(json_str(refused_hello(server.http_port(), ServerProcess::token("alice")), "code"),
            "unauthorized");
  connect_with_token(server.http_port(), mint("alice", "demo", kNewDemoSecret));
}

TEST(ReloadTest, ChangedRateLimitsApplyToOpenConnectionsAndTheApi) {
  ServerProcess server(spec_with_tenants(default_tenants_toml("publish_per_conn_sec = 1000\n"),
                                         admin_extra()));
  server.start();
  const uint16_t port = server.http_port();
  auto c = connect_as(port, "alice");
  c->join("chat:rate");
  auto burst = [&c](int n, int base) {
    for (int i = 0; i < n; ++i) c->send(pub_frame("chat:rate", "m" + std::to_string(base + i), "{}", base + i));
    int acks = 0, limited = 0;
    for (int i = 0; i < n; ++i) {
      for (;;) {
        auto o = c->next();
        if (!o) return std::pair{acks, limited};
        if (op_of(*o) == "ack") { ++acks; break; }
        if (op_of(*o) == "error") {
          EXPECT_EQ(json_str(*o, "code"), "rate_limited") << *o;
          EXPECT_GT(json_int(*o, "retry_ms").value_or(0), 0) << *o;
          ++limited;
          break;
        }
      }
    }
    return std::pair{acks, limited};
  };
  auto [acks, limited] = burst(20, 100);
  EXPECT_EQ(acks, 20);
  EXPECT_EQ(limited, 0);
  int http_429 = 0;
  for (int i = 0; i < 20; ++i) http_429 += publish(port, kDemoApiKey, "chat:api") == "429";
  EXPECT_EQ(http_429, 0);

  server.write_config(spec_with_tenants(
      default_tenants_toml("publish_per_conn_sec = 5\npublish_per_sec = 5\n"), admin_extra()));
  CliRun r = parley_reload(server);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("changed demo"), std::string::npos) << r.output;
  // The same connection, now held to 5 a second (a burst of 5).
  std::tie(acks, limited) = burst(20, 200);
  EXPECT_LE(acks, 6);
  EXPECT_GE(limited, 14);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  http_429 = 0;
  for (int i = 0; i < 20; ++i) http_429 += publish(port, kDemoApiKey, "chat:api") == "429";
  EXPECT_GE(http_429, 14);
}

TEST(ReloadTest, InvalidFileChangesNothingAndSaysWhy) {
  ServerProcess server(spec_with_tenants(default_tenants_toml(), admin_extra()));
  server.start();
  const uint16_t port = server.http_port();
  auto demo = connect_as(port, "alice");
  demo->join("chat:stay");

  // A file that parses but does not check, adding a tenant on the way: nothing of it applies.
  ServerSpec bad = spec_with_tenants(default_tenants_toml() +
                                         tenant_toml("third", "short", kThirdApiKey),
                                     admin_extra());
  server.write_config(bad);
  CliRun r = parley_reload(server);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("nothing changed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tenants.third.secret must be at least 16 bytes"), std::string::npos)
      << r.output;
  EXPECT_TRUE(log_has(server, "config reload refused, nothing changed")) << server.log();
  EXPECT_EQ(publish(port, kThirdApiKey, "chat:x"), "401");

  // A syntax error, by SIGHUP: logged, nothing changes.
  std::string text = default_tenants_toml();
  text.replace(text.find("[tenants.other]"), 15, "[tenants.other");  // unclosed header
  server.write_config(spec_with_tenants(text, admin_extra()));
  server.hangup();
  EXPECT_TRUE(log_has(server, "TOML syntax error")) << server.log();
  // `parley reload` cannot read the admin key from a file that does not parse:
  // it says why and fails without asking. The server's own answer names the place.
  r = parley_reload(server);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("TOML syntax error"), std::string::npos) << r.output;
  auto direct = http_request(port, "POST", "/admin/api/reload", "", kAdminKey);
  EXPECT_EQ(direct.status, 400) << direct.body;
  EXPECT_EQ(json_str(direct.body, "code"), "bad_request") << direct.body;
  EXPECT_NE(json_str(direct.body, "msg").value_or("").find("TOML syntax error at line"),
            std::string::npos) << direct.body;

  // Everything as before: the tenant that remained works, the connection is untouched.
  EXPECT_EQ(publish(port, kOtherApiKey, "chat:x"), "200");
  demo->send(pub_frame("chat:stay", "s1", "{}", 3));
  EXPECT_EQ(json_int(demo->expect("ack"), "seq"), 1);
  EXPECT_FALSE(demo->closed());
  // Without the admin key, no reload at all.
  EXPECT_EQ(http_request(port, "POST", "/admin/api/reload", "", "wrong-key-0123456789").status, 401);
}

TEST(ReloadTest, KeysThatNeedARestartAreReportedNotApplied) {
  ServerProcess server(spec_with_tenants(default_tenants_toml(), admin_extra()));
  server.start();
  server.write_config(spec_with_tenants(
      default_tenants_toml() + "[tenants.demo.namespaces.game]\nupstream = \"http://127.0.0.1:9/x\"\n",
      admin_extra() + "heartbeat_ms = 5000\nappend_queue_limit = 77\n"));
  auto direct = http_request(server.http_port(), "POST", "/admin/api/reload", "", kAdminKey);
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(json_raw(direct.body, "restart_required"),
            R"(["server.heartbeat_ms","server.append_queue_limit","tenants.demo.namespaces.game.upstream"])")
      << direct.body;
  // The namespace itself is live, without the upstream that waits for a restart.
  auto c = connect_as(server.http_port(), "alice");
  c->join("game:1");
  c->send(R"({"op":"up","ch":"game:1","body":{},"rid":4})");
  auto err = c->expect("error");
  EXPECT_EQ(json_str(err, "msg"), "namespace has no upstream") << err;
}

// Issue 22: a [valkey] or [postgres] change (on a node whose store is embedded,
// where they are not even read) used to be "changed none" with nothing listed.
TEST(ReloadTest, StoreSectionChangesAreReportedAsRestartRequired) {
  ServerProcess server(spec_with_tenants(default_tenants_toml(), admin_extra()));
  server.start();
  server.write_config(spec_with_tenants(
      default_tenants_toml() + "[valkey]\nnodes = [\"127.0.0.1:7000\"]\npartitions = 8\n"
                               "[postgres]\nurl = \"postgresql://127.0.0.1/x\"\n",
      admin_extra()));
  auto direct = http_request(server.http_port(), "POST", "/admin/api/reload", "", kAdminKey);
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(json_raw(direct.body, "restart_required"),
            R"(["valkey.nodes","valkey.partitions","postgres.url"])")
      << direct.body;
}

// The tenant "gone" is removed while tenant "demo" carries a publishing load:
// gone's clients get bye (tenant_removed) and close 4001; demo's are not
// disturbed and receive every message exactly once, in order.
TEST(ReloadTest, RemovingATenantUnderLoadClosesOnlyItsConnections) {
  const std::string gone_secret = "test-secret-gone-0123456789abcdef";
  // History reaches every message of the run, for the final audit.
  const std::string tenants =
      default_tenants_toml() + "[tenants.demo.namespaces.chat]\nhistory = 5000\n";
  ServerProcess server(spec_with_tenants(tenants + tenant_toml("gone", gone_secret, "key-gone"),
                                         admin_extra()));
  server.start();
  const uint16_t port = server.http_port();

  constexpr int kReceivers = 8;
  constexpr int kPublishers = 4;
  constexpr int kPerPublisher = 300;  // ~200 msg/s in total for ~6 s
  std::vector<std::unique_ptr<Client>> receivers;
  for (int i = 0; i < kReceivers; ++i) {
    receivers.push_back(connect_as(port, "r" + std::to_string(i)));
    receivers.back()->join("chat:load");
  }
  std::vector<std::unique_ptr<Client>> gone;
  for (int i = 0; i < 10; ++i) {
    gone.push_back(connect_with_token(port, mint("g" + std::to_string(i), "gone", gone_secret)));
    gone.back()->join("chat:load");
  }

  std::atomic<int> acked{0}, errors{0};
  std::vector<std::thread> pubs;
  for (int p = 0; p < kPublishers; ++p) {
    pubs.emplace_back([&, p] {
      auto c = connect_as(port, "p" + std::to_string(p));
      c->join("chat:load");
      for (int i = 0; i < kPerPublisher; ++i) {
        c->send(pub_frame("chat:load", "p" + std::to_string(p) + "-" + std::to_string(i), "{}", i));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      // Every publish is acknowledged (msgs interleave with acks: count acks only).
      int got = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (got < kPerPublisher && std::chrono::steady_clock::now() < deadline) {
        auto o = c->next(std::chrono::seconds(5));
        if (!o) break;
        if (op_of(*o) == "ack") ++got;
        if (op_of(*o) == "error" || op_of(*o) == "bye") ++errors;
      }
      acked += got;
      if (c->closed()) ++errors;
    });
  }

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server.write_config(spec_with_tenants(tenants, admin_extra()));
  CliRun r = parley_reload(server);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("removed gone (10 connections sent bye)"), std::string::npos) << r.output;
  for (auto& g : gone) {
    auto bye = g->expect("bye");
    EXPECT_EQ(bye, R"({"op":"bye","code":"tenant_removed"})");
    EXPECT_EQ(g->wait_closed(), 4001);
  }
  EXPECT_EQ(json_str(refused_hello(port, mint("g0", "gone", gone_secret)), "code"), "unauthorized");
  EXPECT_EQ(publish(port, "key-gone", "chat:load"), "401");

  for (auto& t : pubs) t.join();
  EXPECT_EQ(errors.load(), 0);
  const int total = kPublishers * kPerPublisher;
  EXPECT_EQ(acked.load(), total);
  // Every receiver: seqs 1..total, each once, in order, and still connected.
  for (auto& rc : receivers) {
    int64_t expect_seq = 1;
    while (expect_seq <= total) {
      auto o = rc->next(std::chrono::seconds(10));
      ASSERT_TRUE(o) << "receiver stopped at seq " << expect_seq;
      if (op_of(*o) == "presence") continue;  // the publishers joining
      if (op_of(*o) != "msg") {
        ADD_FAILURE() << "unexpected frame " << *o;
        continue;
      }
      ASSERT_EQ(json_int(*o, "seq"), expect_seq) << *o;
      ++expect_seq;
    }
    EXPECT_FALSE(rc->closed());
  }
  EXPECT_EQ(http_history_all(port, "chat:load").size(), static_cast<size_t>(total));
}

}  // namespace
}  // namespace parley::testing
