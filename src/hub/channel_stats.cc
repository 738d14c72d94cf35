#include "hub/channel_stats.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "hub/hub.h"

namespace parley::hub {

void keep_busiest(std::vector<ChannelStat>& all, size_t n) {
  const auto busier = [](const ChannelStat& a, const ChannelStat& b) {
    if (a.published != b.published) return a.published > b.published;
    return a.members > b.members;
  };
  if (all.size() > n) {
    std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n), all.end(), busier);
    all.resize(n);
  } else {
    std::sort(all.begin(), all.end(), busier);
  }
}

std::vector<ChannelStat> Shard::busiest(size_t n) {
  std::vector<ChannelStat> out;
  out.reserve(channels_.size());
  for (auto& [key, c] : channels_) {
    // A channel seen for the first time counts from now, not from its
    // recovered seq (which would rank a reloaded channel as a burst).
    const uint64_t last = c->log.last();
    const uint64_t published = c->stats_seen && last >= c->stats_seq ? last - c->stats_seq : 0;
    c->stats_seq = last;
    c->stats_seen = true;
    out.push_back({c->id.tenant, c->id.channel, published, last,
                   static_cast<uint32_t>(c->members.size())});
  }
  keep_busiest(out, n);
  return out;
}

void Hub::busiest_channels(size_t n, ChannelStatsDone done) {
  // Each shard fills its own slot on its loop; the last one to finish merges
  // (the counter's acq_rel orders the slots' writes before the merge).
  struct Gather {
    std::vector<std::vector<ChannelStat>> slots;
    std::atomic<size_t> remaining;
    ChannelStatsDone done;
  };
  auto g = std::make_shared<Gather>();
  g->slots.resize(shards_.size());
  g->remaining.store(shards_.size());
  g->done = std::move(done);
  for (unsigned i = 0; i < shards_.size(); ++i) {
    Shard* s = shards_[i].get();
    loops_.run_on(i, [g, s, i, n] {
      g->slots[i] = s->busiest(n);
      if (g->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      std::vector<ChannelStat> all;
      for (auto& slot : g->slots) {
        for (auto& c : slot) all.push_back(std::move(c));
      }
      keep_busiest(all, n);
      g->done(std::move(all));
    });
  }
}

}  // namespace parley::hub
