// The channels this node follows on the valkey store (the ones the cluster's
// broker watches, cluster/valkey_broker.h) and, for each, the highest seq this
// node knows the store committed and the epoch with it (docs/architecture.md,
// "A failover that lost acknowledged messages"). A master that lacks that seq
// (a replica promoted before it had everything) is found out by the next seq-0
// append, which sends it, or by the loss check when the partition moves.
//
// Shared by the two sides of a node's store traffic, neither of which owns the
// other: the store raises `seen` from its confirmed append answers, history
// reads and loads and sends it with each append; the broker adds and drops
// channels as they are watched and raises `seen` from the current master's
// pushes.
//
// Threads: any. Its own lock, held for one map operation and never while
// calling out, so it nests inside either side's lock and takes neither.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/channel_id.h"

namespace parley::store::valkey {

// Logs that a channel's store lost acknowledged messages, its seqs going on
// from `seq` under `epoch` (issue 30).
void log_loss(const ChannelId& id, uint64_t seq, uint32_t epoch);

class FollowedChannels {
 public:
  // `id` is followed from now on (seen 0, epoch 1), unless it already is.
  void follow(const ChannelId& id);
  // What was known of `id` goes.
  void unfollow(const ChannelId& id);
  // The highest seq known committed; 0 for a channel not followed.
  uint64_t seen(const ChannelId& id) const;
  // Raises a followed channel's seen and epoch; logs a loss (log_loss, seqs
  // going on from `seq`) the first time its epoch is seen to go up here, and
  // says whether it did. `quiet`: a channel's load reads its epoch; only a
  // rise seen afterwards is news.
  bool note_seen(const ChannelId& id, uint64_t seq, uint32_t epoch, bool quiet);
  // The tenants with a followed channel, sorted, each once.
  std::vector<std::string> tenants() const;

 private:
  struct Known {
    uint64_t seen = 0;
    uint32_t epoch = 1;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Known> channels_;  // by ChannelId::key()
  std::map<std::string, size_t> tenants_;             // followed channels per tenant
};

}  // namespace parley::store::valkey
