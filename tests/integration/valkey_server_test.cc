// The real binary on store = "valkey" against a real redis-server
// (tests/support/redis_server.h): acks, live delivery, history and dedupe all come
// from Valkey, so a second server process on the same Valkey carries on where a
// killed one stopped; with Valkey gone publishes answer `unavailable` on open
// connections and service resumes by itself when it is back.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

ServerSpec valkey_spec(const std::string& address, const std::string& extra = "") {
  ServerSpec spec = spec_with_tenants(default_tenants_toml(
      "publish_per_sec = 0\npublish_per_conn_sec = 0\n"));
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_toml({address}) + extra;
  return spec;
}

TEST(ValkeyServer, SecondServerOnTheSameValkeyCarriesOnAfterAKill9) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  auto first = std::make_unique<ServerProcess>(valkey_spec(redis.address()));
  first->start();
  auto pub = connect_as(first->http_port(), "alice");
  auto sub = connect_as(first->http_port(), "bob");
  ASSERT_EQ(op_of(pub->join("chat:room")), "joined");
  ASSERT_EQ(op_of(sub->join("chat:room")), "joined");
  constexpr int kN = 50;
  for (int i = 1; i <= kN; ++i) {
    pub->send(pub_frame("chat:room", "m" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}", i));
  }
  for (int i = 1; i <= kN; ++i) {
    const std::string ack = pub->expect("ack");
    ASSERT_EQ(json_int(ack, "seq"), i) << ack;
    EXPECT_EQ(json_bool(ack, "dup"), false);
  }
  for (int i = 1; i <= kN; ++i) {
    const std::string msg = sub->expect("msg");
    ASSERT_EQ(json_int(msg, "seq"), i) << msg;
    EXPECT_EQ(json_raw(msg, "body"), "{\"n\":" + std::to_string(i) + "}");
  }
  // Every key lives in Valkey, under the channel's partition tag.
  EXPECT_NE(redis.command({"KEYS", "{demo.p*}:s:chat:room"}), "");
  // The store path's metrics: one script round trip per pub, the node's queues.
  const std::string metrics = http_request(first->http_port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("parley_valkey_script_seconds_count " + std::to_string(kN)), std::string::npos);
  EXPECT_NE(metrics.find("parley_valkey_in_flight{node=\"" + redis.address() + "\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.find("parley_valkey_node_down{node=\"" + redis.address() + "\"} 0"),
            std::string::npos);
  first->kill9();

  ServerProcess second(valkey_spec(redis.address()));
  second.start();
  const auto history = http_history_all(second.http_port(), "chat:room");
  ASSERT_EQ(history.size(), size_t{kN});
  for (int i = 0; i < kN; ++i) EXPECT_EQ(json_int(history[i], "seq"), i + 1);
  auto again = connect_as(second.http_port(), "alice");
  ASSERT_EQ(op_of(again->join("chat:room")), "joined");
  // A retry of an acknowledged pub is a duplicate: the dedupe window is in Valkey too.
  again->send(pub_frame("chat:room", "m7", "{\"n\":7}", 1));
  const std::string dup = again->expect("ack");
  EXPECT_EQ(json_int(dup, "seq"), 7) << dup;
  EXPECT_EQ(json_bool(dup, "dup"), true);
  again->send(pub_frame("chat:room", "new", "{}", 2));
  EXPECT_EQ(json_int(again->expect("ack"), "seq"), kN + 1);
}

TEST(ValkeyServer, ValkeyDownAnswersUnavailableAndServiceResumesByItself) {
  char tmpl[] = "/tmp/parley-valkey-down-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  RedisServer redis(std::string(tmpl) + "/redis", RedisServer::Options{false, "always"});
  ASSERT_TRUE(redis.ok()) << redis.why();
  ServerProcess server(valkey_spec(redis.address(), "command_timeout_ms = 500\n"));
  server.start();
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:room")), "joined");
  c->send(pub_frame("chat:room", "a", "{}", 1));
  ASSERT_EQ(json_int(c->expect("ack"), "seq"), 1);

  redis.kill9();
  c->send(pub_frame("chat:room", "b", "{}", 2));
  const std::string err = ack_or_error(*c);
  EXPECT_EQ(op_of(err), "error") << err;
  EXPECT_EQ(json_str(err, "code"), "unavailable") << err;
  EXPECT_GT(json_int(err, "retry_ms").value_or(0), 0) << err;
  EXPECT_FALSE(c->closed());
  auto health = http_request(server.http_port(), "GET", "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.body.find("unreachable"), std::string::npos) << health.body;

  ASSERT_TRUE(redis.restart());
  // No client traffic needed for the node to turn healthy again.
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(50ms);
    status = http_request(server.http_port(), "GET", "/healthz").status;
  }
  EXPECT_EQ(status, 200);
  // The client retries its unacknowledged pub: it gets the next seq, no gap.
  std::string ack;
  for (int i = 0; i < 50; ++i) {
    c->send(pub_frame("chat:room", "b", "{}", 3));
    ack = ack_or_error(*c);
    if (op_of(ack) == "ack") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(op_of(ack), "ack") << ack;
  EXPECT_EQ(json_int(ack, "seq"), 2) << ack;
  const auto history = http_history_all(server.http_port(), "chat:room");
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(json_str(history[1], "id"), "b");
  std::filesystem::remove_all(tmpl);
}

TEST(ValkeyServer, NodeWhoseValkeyDoesNotAnswerAtStartIsNotReadyUntilItDoes) {
  char tmpl[] = "/tmp/parley-valkey-ready-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  RedisServer redis(std::string(tmpl) + "/redis");
  ASSERT_TRUE(redis.ok()) << redis.why();
  redis.kill9();  // its port stays ours: restart() brings it back there
  ServerProcess server(valkey_spec(redis.address(), "command_timeout_ms = 500\n"));
  server.start_waiting_for_store();
  // Listening, but not ready: a load balancer sends nobody here.
  for (int i = 0; i < 5; ++i) {
    auto health = http_request(server.http_port(), "GET", "/healthz");
    EXPECT_EQ(health.status, 503) << health.body;
    EXPECT_NE(health.body.find("unreachable"), std::string::npos) << health.body;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(server.log().find("parley ready"), std::string::npos);
  ASSERT_TRUE(redis.restart());
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    std::this_thread::sleep_for(50ms);
    ready = server.log().find("parley ready http=" + std::to_string(server.http_port())) != std::string::npos;
  }
  EXPECT_TRUE(ready) << server.log();
  EXPECT_EQ(http_request(server.http_port(), "GET", "/healthz").status, 200);
  auto c = connect_as(server.http_port(), "alice");
  ASSERT_EQ(op_of(c->join("chat:room")), "joined");
  c->send(pub_frame("chat:room", "a", "{}", 1));
  EXPECT_EQ(json_int(c->expect("ack"), "seq"), 1);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace parley::testing
