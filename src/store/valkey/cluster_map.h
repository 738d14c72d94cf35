// Which Valkey/Redis Cluster node serves each of the 16384 slots, as CLUSTER SLOTS
// reports it, and the redirections a node answers with (MOVED, ASK).
//
// Plain values and pure parsing, any thread; discover() blocks (hiredis's
// synchronous API) and runs only off the loops: at open, and on the store's
// re-discovery thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/status.h"

struct redisReply;

namespace parley::store::valkey {

struct SlotRange {
  uint16_t first = 0;
  uint16_t last = 0;
  HostPort master;
};

// The masters' slot ranges from a CLUSTER SLOTS reply; an error when the reply
// has another shape or leaves a slot uncovered.
Result<std::vector<SlotRange>> parse_cluster_slots(const redisReply* r);

// Asks each seed in turn (timeout_ms each) until one answers CLUSTER SLOTS.
Result<std::vector<SlotRange>> discover(const std::vector<HostPort>& seeds, int timeout_ms);

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381".
struct Redirect {
  bool ask = false;
  uint16_t slot = 0;
  HostPort to;
};
std::optional<Redirect> parse_redirect(const std::string& error);

}  // namespace parley::store::valkey
