// CLUSTER NODES parsing and the merge of several nodes' views (cluster_map.h):
// what decides where the store sends a partition after a failover.
#include "store/valkey/cluster_map.h"

#include <gtest/gtest.h>

namespace parley::store::valkey {
namespace {

const HostPort kAsked{"127.0.0.1", 7001, false};

// Node 7000 was master of 0-5460 (epoch 1); its replica 7003 took over (epoch 7).
constexpr const char* kAfterFailover =
    "a1 127.0.0.1:7000@17000 master,fail - 1 1 1 disconnected\n"
    "b2 127.0.0.1:7001@17001 myself,master - 0 0 2 connected 5461-10922\n"
    "c3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383 [16000->-b2]\n"
    "d4 127.0.0.1:7003@17003 master - 0 0 7 connected 0-5460\n"
    "e5 127.0.0.1:7004@17004 slave b2 0 0 2 connected\n";

// What the old master says for a moment after it resumes from a hang.
constexpr const char* kStaleMaster =
    "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n"
    "b2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922\n"
    "c3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383\n"
    "d4 127.0.0.1:7003@17003 slave a1 0 0 1 connected\n";

TEST(ClusterMap, ClusterNodesLinesGiveRoleEpochAndServedSlotsWithoutMigrations) {
  auto nodes = parse_cluster_nodes(kAfterFailover, kAsked);
  ASSERT_TRUE(nodes) << nodes.error().msg;
  ASSERT_EQ(nodes->size(), 5u);
  EXPECT_TRUE((*nodes)[0].failed);
  EXPECT_TRUE((*nodes)[0].slots.empty());
  EXPECT_EQ((*nodes)[2].slots.size(), 1u);  // the migration entry is left out
  EXPECT_EQ((*nodes)[3].config_epoch, 7u);
  EXPECT_FALSE((*nodes)[4].master);
  EXPECT_FALSE(parse_cluster_nodes("a1 127.0.0.1:7000@17000 master - 0 0 x connected\n", kAsked));
  EXPECT_FALSE(parse_cluster_nodes("", kAsked));
}

TEST(ClusterMap, HigherConfigEpochWinsSoAStaleMastersViewLosesToThePromotedReplica) {
  auto fresh = parse_cluster_nodes(kAfterFailover, kAsked);
  auto stale = parse_cluster_nodes(kStaleMaster, HostPort{"127.0.0.1", 7000, false});
  ASSERT_TRUE(fresh && stale);
  auto view = merge_views({*stale, *fresh});
  ASSERT_TRUE(view) << view.error().msg;
  ASSERT_EQ(view->ranges.size(), 3u);
  EXPECT_EQ(view->ranges[0].first, 0);
  EXPECT_EQ(view->ranges[0].last, 5460);
  EXPECT_EQ(view->ranges[0].master.port, 7003);
  EXPECT_EQ(view->ranges[2].master.port, 7002);
  EXPECT_EQ(view->nodes.size(), 5u);  // every node named, replicas too
  // Alone, the stale view is all there is: it is followed until a MOVED or the next read.
  auto alone = merge_views({*stale});
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->ranges[0].master.port, 7000);
}

}  // namespace
}  // namespace parley::store::valkey
