// The Redis fixture the valkey store's tests stand on (tests/support/redis_server.h):
// a real server that survives a crash with its data, and a real 3-master cluster.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/redis_server.h"

namespace parley::testing {
namespace {

TEST(RedisFixture, StandaloneAnswersAndKeepsDataAcrossAKill9) {
  char tmpl[] = "/tmp/parley-redis-fixture-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  {
    RedisServer r(tmpl, RedisServer::Options{false, "always"});
    ASSERT_TRUE(r.ok()) << r.why();
    EXPECT_LT(r.port(), 55536);
    EXPECT_EQ(r.command({"SET", "k", std::string("v\0w", 3)}), "OK");
    const int port = r.port();
    r.kill9();
    EXPECT_EQ(r.command({"PING"}), "");
    ASSERT_TRUE(r.restart());
    EXPECT_EQ(r.port(), port);
    EXPECT_EQ(r.command({"GET", "k"}), std::string("v\0w", 3));
  }
  std::filesystem::remove_all(tmpl);
}

TEST(RedisFixture, SharedClusterCoversEverySlotOnThreeMasters) {
  RedisCluster& c = shared_redis_cluster();
  ASSERT_TRUE(c.ok()) << c.why();
  ASSERT_EQ(c.size(), 3u);
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_LT(c.node(i).port() + 10000, 65536);
    const std::string info = c.node(i).command({"CLUSTER", "INFO"});
    EXPECT_NE(info.find("cluster_state:ok"), std::string::npos);
    EXPECT_NE(info.find("cluster_slots_assigned:16384"), std::string::npos);
    EXPECT_NE(info.find("cluster_known_nodes:3"), std::string::npos);
  }
}

}  // namespace
}  // namespace parley::testing
