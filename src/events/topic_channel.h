// The store channels of a topic (tenant, "<topic>\x1f..."): partition p's log
// "<topic>\x1f<p>", the key-hash record "<topic>\x1fh" (key_hash.h), the board
// snapshots "<topic>\x1fs" and a consumer group's commit log
// "<topic>\x1fg\x1f<group>". A client's channel name never holds 0x1f (the
// channel-name rules of PROTOCOL.md), so none of these is ever a channel's.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parley::events {

std::string partition_channel(std::string_view topic, uint32_t p);
std::string key_hash_channel(std::string_view topic);
std::string snapshot_channel(std::string_view topic);
std::string group_log_channel(std::string_view topic, std::string_view group);

// The topic whose channel this is (what precedes the first 0x1f); nullopt for
// a channel of no topic.
std::optional<std::string_view> topic_of_channel(std::string_view channel);

struct PartitionChannel {
  std::string_view topic;  // a view into the channel parsed
  uint32_t p = 0;
};
// A partition log's channel, read back: nullopt for a topic's other channels
// and for anything else (the partition is 1 to 6 decimal digits).
std::optional<PartitionChannel> parse_partition_channel(std::string_view channel);

}  // namespace parley::events
