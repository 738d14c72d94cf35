// A topic's store channels and how the feed of a shared store is routed back
// to them: only a partition's log is a partition.
#include "events/topic_channel.h"

#include <gtest/gtest.h>

#include <string>

namespace parley::events {
namespace {

TEST(TopicChannel, EachOfATopicsChannelsIsItsNameAndASuffix) {
  EXPECT_EQ(partition_channel("kills", 0), std::string("kills\x1f" "0"));
  EXPECT_EQ(partition_channel("kills", 15), std::string("kills\x1f" "15"));
  EXPECT_EQ(key_hash_channel("kills"), std::string("kills\x1fh"));
  EXPECT_EQ(snapshot_channel("kills"), std::string("kills\x1fs"));
  EXPECT_EQ(group_log_channel("kills", "scorers"), std::string("kills\x1fg\x1fscorers"));
}

TEST(TopicChannel, APartitionsLogReadsBackAsItsTopicAndPartition) {
  for (uint32_t p : {0u, 7u, 255u, 999'999u}) {
    const std::string ch = partition_channel("match.events", p);
    auto pc = parse_partition_channel(ch);
    ASSERT_TRUE(pc) << p;
    EXPECT_EQ(pc->topic, "match.events");
    EXPECT_EQ(pc->p, p);
  }
}

TEST(TopicChannel, ATopicsOtherChannelsAreNoPartition) {
  EXPECT_FALSE(parse_partition_channel(key_hash_channel("kills")));
  EXPECT_FALSE(parse_partition_channel(snapshot_channel("kills")));
  EXPECT_FALSE(parse_partition_channel(group_log_channel("kills", "7")));
  EXPECT_FALSE(parse_partition_channel(group_log_channel("kills", "")));
}

TEST(TopicChannel, ANameThatIsNoPartitionLogIsRefused) {
  EXPECT_FALSE(parse_partition_channel("lobby")) << "a client's channel";
  EXPECT_FALSE(parse_partition_channel("kills\x1f")) << "no partition";
  EXPECT_FALSE(parse_partition_channel("kills\x1f" "1000000")) << "more than 6 digits";
  EXPECT_FALSE(parse_partition_channel("kills\x1f" "-1"));
  EXPECT_FALSE(parse_partition_channel("kills\x1f" "1 "));
  EXPECT_FALSE(parse_partition_channel("kills\x1f" "0x1"));
}

TEST(TopicChannel, TheTopicIsWhatPrecedesTheFirstSeparator) {
  EXPECT_EQ(topic_of_channel(partition_channel("kills", 3)), "kills");
  EXPECT_EQ(topic_of_channel(group_log_channel("kills", "g")), "kills");
  EXPECT_EQ(topic_of_channel(snapshot_channel("a:b")), "a:b");
  EXPECT_FALSE(topic_of_channel("lobby")) << "a client's channel belongs to no topic";
  EXPECT_FALSE(topic_of_channel(""));
}

}  // namespace
}  // namespace parley::events
