// The hub: routes each channel operation to the shard that owns the channel
// (a stable hash of tenant and name) by posting to that shard's loop.
// Any thread. Owns the shards and the per-loop fan-out views.
#pragma once

#include <memory>
#include <vector>

#include "hub/tick_batcher.h"
#include "hub/requests.h"
#include "hub/shard.h"

namespace parley::hub {

class Hub {
 public:
  Hub(runtime::LoopGroup& loops, Stores stores, metrics::Metrics& metrics, ShardOptions opts);

  unsigned shard_of(std::string_view tenant, std::string_view ch) const;
  TickBatcher& fanout(unsigned loop) { return *fanouts_[loop]; }

  void join(JoinRequest req);
  void leave(const TenantConfig* tenant, std::string ch, uint64_t conn);
  void publish(PublishRequest req);
  void state(StateRequest req);
  void members(const TenantConfig* tenant, std::string ch, unsigned reply_loop,
               MembersDone done);
  // Runs the idle sweep on every shard (call periodically, any thread).
  void sweep();

  size_t inflight() const;
  size_t channel_count() const;

 private:
  runtime::LoopGroup& loops_;
  std::vector<std::unique_ptr<TickBatcher>> fanouts_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace parley::hub
