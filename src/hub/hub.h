// The hub: routes each channel operation to the shard that owns the channel
// (a stable hash of tenant and name) by posting to that shard's loop.
// Any thread. Owns the shards and the per-loop fan-out views.
#pragma once

#include <memory>
#include <vector>

#include "hub/tick_batcher.h"
#include "hub/requests.h"
#include "hub/shard.h"
#include "runtime/gate.h"

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

  // Drain: from now on joins and publishes are answered `unavailable`, and
  // `on_idle` runs once every one already accepted has been answered (its
  // `done` has run on its reply loop, so acks are queued to their clients).
  // Once; any thread but a loop's own blocking wait.
  void close(std::function<void()> on_idle) { requests_.close(std::move(on_idle)); }

  size_t inflight() const;
  size_t channel_count() const;

 private:
  runtime::LoopGroup& loops_;
  std::vector<std::unique_ptr<TickBatcher>> fanouts_;
  std::vector<std::unique_ptr<Shard>> shards_;
  runtime::Gate requests_;  // joins and publishes not yet answered
};

}  // namespace parley::hub
