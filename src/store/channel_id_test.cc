#include "store/channel_id.h"

#include <gtest/gtest.h>

#include <string>

namespace parley::store {
namespace {

TEST(ChannelIdTest, TheScratchKeyIsTheKeyAndItsBufferIsReused) {
  const std::string long_tenant(200, 't');
  for (const auto& [tenant, channel] :
       {std::pair<std::string, std::string>{"demo", "room:bench-0042"}, {"", "c"},
        {long_tenant, "chat:lobby"}, {"a", ""}}) {
    EXPECT_EQ(ChannelId::scratch_key(tenant, channel), ChannelId::key_of(tenant, channel));
    EXPECT_EQ((ChannelId{tenant, channel}.key()), ChannelId::key_of(tenant, channel));
  }
  EXPECT_EQ(ChannelId::key_of("demo", "chat:x"), "4:demochat:x");
  EXPECT_EQ(ChannelId::key_of(long_tenant, "x"), "200:" + long_tenant + "x");
  // Lookups reuse one per-thread buffer: the second key replaces the first.
  const std::string& first = ChannelId::scratch_key("demo", "a");
  const std::string* at = &first;
  EXPECT_EQ(&ChannelId::scratch_key("demo", "b"), at);
  EXPECT_EQ(*at, "4:demob");
}

}  // namespace
}  // namespace parley::store
