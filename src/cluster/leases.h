// Leases: a hold on a name that one node at a time has (a consumer group's,
// events/topic.h), for a time unless renewed.
//
// Threads: any thread calls in; claim answers on a lease thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "store/channel_id.h"

namespace parley::cluster {

// The holder after a claim: the claiming node when granted or renewed.
using ClaimDone = std::function<void(Result<std::string>)>;

class Leases {
 public:
  virtual ~Leases() = default;
  // `node` gets the hold on `id`, or keeps it, for ttl_ms unless another node
  // holds it; `done` hears who holds it.
  virtual void claim(const store::ChannelId& id, const std::string& node, int64_t ttl_ms, ClaimDone done) = 0;
  // Gives the hold up if `node` has it (fire and forget).
  virtual void release(const store::ChannelId& id, const std::string& node) = 0;
};

}  // namespace parley::cluster
