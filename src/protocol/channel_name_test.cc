#include <gtest/gtest.h>

#include <string>

#include "protocol/decoder.h"

namespace parley::protocol {
namespace {

TEST(ChannelName, AcceptsEveryAllowedChar) {
  EXPECT_TRUE(is_valid_channel("azAZ09_.:@-"));
  EXPECT_TRUE(is_valid_channel("c"));
  EXPECT_TRUE(is_valid_channel("chat:lobby"));
  EXPECT_TRUE(is_valid_channel("team@eu-1.match:42"));
}

TEST(ChannelName, Accepts128CharsAndNotOneMore) {
  EXPECT_TRUE(is_valid_channel(std::string(128, 'x')));
  EXPECT_FALSE(is_valid_channel(std::string(129, 'x')));
}

TEST(ChannelName, RejectsEmptyAndOtherChars) {
  EXPECT_FALSE(is_valid_channel(""));
  for (std::string_view bad : {"a b", "a/b", "a*", "a#", "a\"", "a,b", "a\n", "caf\xc3\xa9",
                               "a+b", "a~", "[a]"}) {
    EXPECT_FALSE(is_valid_channel(bad)) << bad;
  }
  EXPECT_FALSE(is_valid_channel(std::string_view("a\0b", 3)));
}

TEST(ChannelNamespace, IsThePartBeforeTheFirstColon) {
  EXPECT_EQ(channel_namespace("chat:lobby"), "chat");
  EXPECT_EQ(channel_namespace("world:7:zone:3"), "world");
  EXPECT_EQ(channel_namespace("a:"), "a");
}

TEST(ChannelNamespace, IsDefaultWithoutAColon) {
  EXPECT_EQ(channel_namespace("lobby"), "default");
  EXPECT_EQ(channel_namespace("a.b@c"), "default");
}

TEST(ChannelNamespace, IsEmptyForALeadingColon) {
  EXPECT_EQ(channel_namespace(":lobby"), "");
}

}  // namespace
}  // namespace parley::protocol
