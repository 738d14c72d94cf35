// The busiest channels of a node, for the admin page (api/admin_api.h).
// Each shard ranks its own channels on its loop by what they published since
// the previous ranking; Hub::busiest_channels gathers the shards' lists.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace parley::hub {

struct ChannelStat {
  std::string tenant;
  std::string ch;
  uint64_t published = 0;  // seqs assigned since the previous ranking
  uint64_t last_seq = 0;
  uint32_t members = 0;    // connections joined on this node
};

using ChannelStatsDone = std::function<void(std::vector<ChannelStat>)>;

// The `n` entries of `all` that published most (then most members), best first.
void keep_busiest(std::vector<ChannelStat>& all, size_t n);

}  // namespace parley::hub
