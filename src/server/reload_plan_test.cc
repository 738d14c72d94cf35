#include "server/reload_plan.h"

#include <gtest/gtest.h>

namespace parley::server {
namespace {

ServerConfig with_tenant() {
  ServerConfig c;
  TenantConfig t;
  t.id = "demo";
  t.secret = "demo-secret-0123456789";
  t.api_key = "k";
  NamespaceConfig world;
  world.upstream = "http://127.0.0.1:9000/events";
  t.namespaces.emplace("world", world);
  c.tenants.emplace("demo", t);
  return c;
}

TEST(ReloadPlan, NothingChangedNeedsNoRestart) {
  const ServerConfig running = with_tenant();
  ReloadPlan p = plan_reload(running, running);
  EXPECT_TRUE(p.restart_required.empty());
  EXPECT_EQ(p.next.tenants, running.tenants);
}

TEST(ReloadPlan, ServerKeysKeepTheirRunningValueAndAreListed) {
  const ServerConfig running = with_tenant();
  ServerConfig file = running;
  file.listen = "127.0.0.1:9999";
  file.data_dir = "/elsewhere";
  file.log_level = "debug";  // live
  ReloadPlan p = plan_reload(running, file);
  EXPECT_EQ(p.restart_required, (std::vector<std::string>{"server.listen", "server.data_dir"}));
  EXPECT_EQ(p.next.listen, running.listen);
  EXPECT_EQ(p.next.data_dir, running.data_dir);
  EXPECT_EQ(p.next.log_level, "debug");
}

TEST(ReloadPlan, UpstreamTargetsWaitForARestartTheRestOfTheNamespaceIsLive) {
  const ServerConfig running = with_tenant();
  ServerConfig file = running;
  auto& t = file.tenants.at("demo");
  t.namespaces.at("world").upstream = "http://127.0.0.1:9001/other";
  t.namespaces.at("world").tick_ms = 50;
  NamespaceConfig chat;
  chat.upstream = "http://127.0.0.1:9000/chat";
  chat.history = 10;
  t.namespaces.emplace("chat", chat);
  t.publish_per_sec = 7;
  ReloadPlan p = plan_reload(running, file);
  EXPECT_EQ(p.restart_required,
            (std::vector<std::string>{"tenants.demo.namespaces.chat.upstream",
                                      "tenants.demo.namespaces.world.upstream"}));
  const auto& next = p.next.tenants.at("demo");
  EXPECT_EQ(next.namespaces.at("world").upstream, "http://127.0.0.1:9000/events");
  EXPECT_EQ(next.namespaces.at("world").tick_ms, 50u);
  EXPECT_EQ(next.namespaces.at("chat").upstream, "");
  EXPECT_EQ(next.namespaces.at("chat").history, 10u);
  EXPECT_EQ(next.publish_per_sec, 7u);
}

TEST(ReloadPlan, ANewTenantGetsNoUpstreamUntilARestart) {
  const ServerConfig running = with_tenant();
  ServerConfig file = running;
  TenantConfig t2 = file.tenants.at("demo");
  t2.id = "t2";
  file.tenants.emplace("t2", t2);
  ReloadPlan p = plan_reload(running, file);
  EXPECT_EQ(p.restart_required, (std::vector<std::string>{"tenants.t2.namespaces.world.upstream"}));
  EXPECT_EQ(p.next.tenants.at("t2").namespaces.at("world").upstream, "");
}

TEST(ReloadPlan, ATopicKeepsItsPartitions) {
  ServerConfig running = with_tenant();
  running.tenants.at("demo").topics["hunt"].partitions = 16;
  ServerConfig file = running;
  file.tenants.at("demo").topics["hunt"].partitions = 8;
  file.tenants.at("demo").topics["hunt"].tick_ms = 5;
  file.tenants.at("demo").topics["new"].partitions = 4;
  ReloadPlan p = plan_reload(running, file);
  EXPECT_EQ(p.restart_required, (std::vector<std::string>{"tenants.demo.topics.hunt.partitions"}));
  EXPECT_EQ(p.next.tenants.at("demo").topics.at("hunt").partitions, 16u);
  EXPECT_EQ(p.next.tenants.at("demo").topics.at("hunt").tick_ms, 5u);
  EXPECT_EQ(p.next.tenants.at("demo").topics.at("new").partitions, 4u);
}

// Issue 22: a reload that changed [valkey] or [postgres] logged "changed none".
// Each key below, changed in the file, keeps its running value and is listed
// (and [persist]'s, which only `parley persist` reads, at its restart).
TEST(ReloadPlan, EveryStoreAndPersisterKeyIsListedAsRestartRequired) {
  const std::string base = R"([tenants.demo]
secret = "demo-secret-0123456789"
api_key = "k"
)";
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"valkey", "nodes = [\"127.0.0.1:7000\"]"},
      {"valkey", "cluster = true"},
      {"valkey", "partitions = 8"},
      {"valkey", "pool_size = 3"},
      {"valkey", "command_timeout_ms = 900"},
      {"valkey", "wal_max_len = 5000"},
      {"valkey", "wal_hard_cap = 6000"},
      {"valkey", "fanout_gap_ms = 9"},
      {"valkey", "presence_ttl_ms = 2000"},
      {"valkey", "topology_refresh_ms = 900"},
      {"valkey", "wait_replicas = 1"},
      {"valkey", "wait_timeout_ms = 900"},
      {"postgres", "url = \"postgresql://127.0.0.1/x\""},
      {"postgres", "readers = 3"},
      {"postgres", "timeout_ms = 900"},
      {"persist", "listen = \"127.0.0.1:7799\""},
      {"persist", "group = \"g2\""},
      {"persist", "consumer = \"c2\""},
      {"persist", "batch = 7"},
      {"persist", "threads = 2"},
      {"persist", "poll_ms = 9"},
      {"persist", "claim_idle_ms = 900"},
      {"persist", "trim_interval_ms = 90"},
  };
  auto running = parse_config(base);
  ASSERT_TRUE(running) << running.error().msg;
  for (const auto& [section, line] : changes) {
    auto file = parse_config(base + "[" + section + "]\n" + line + "\n");
    ASSERT_TRUE(file) << line << ": " << file.error().msg;
    const std::string key = section + "." + line.substr(0, line.find(' '));
    ReloadPlan p = plan_reload(*running, *file);
    EXPECT_EQ(p.restart_required, (std::vector<std::string>{key})) << line;
    EXPECT_TRUE(p.next.valkey == running->valkey) << line;
    EXPECT_TRUE(p.next.postgres == running->postgres) << line;
    EXPECT_TRUE(p.next.persist == running->persist) << line;
  }
}

}  // namespace
}  // namespace parley::server
