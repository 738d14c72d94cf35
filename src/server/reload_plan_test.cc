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

}  // namespace
}  // namespace parley::server
