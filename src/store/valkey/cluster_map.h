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
  uint64_t epoch = 0;  // the master's config epoch (CLUSTER NODES; 0 from CLUSTER SLOTS)
};

// The masters' slot ranges from a CLUSTER SLOTS reply; an error when the reply
// has another shape or leaves a slot uncovered.
Result<std::vector<SlotRange>> parse_cluster_slots(const redisReply* r);

// Asks each seed in turn (timeout_ms each) until one answers CLUSTER SLOTS.
Result<std::vector<SlotRange>> discover(const std::vector<HostPort>& seeds, int timeout_ms);

// One line of CLUSTER NODES as the asked node sees it.
struct ClusterNode {
  HostPort addr;
  bool master = false;
  bool failed = false;        // flagged `fail` (the cluster agrees it is down)
  uint64_t config_epoch = 0;  // a promoted replica takes a higher one than its old master
  std::vector<std::pair<uint16_t, uint16_t>> slots;  // served ranges (migrations left out)
};
// `asked` fills in the address of a node that does not know its own yet.
Result<std::vector<ClusterNode>> parse_cluster_nodes(std::string_view text, const HostPort& asked);

// Several nodes' views merged: each slot goes to the master claiming it with the
// highest config epoch, the rule the cluster itself follows, so a master that was
// hung and has not yet heard of its replica's promotion loses to the view of any
// node that has. `nodes`: every node any view named (masters and replicas), to ask
// next time.
struct ClusterView {
  std::vector<SlotRange> ranges;
  std::vector<HostPort> nodes;
  size_t answered = 0;  // how many nodes' views went into it
};
// Slots no view covers stay out of `ranges`; an error when none is covered.
Result<ClusterView> merge_views(const std::vector<std::vector<ClusterNode>>& views);

// Asks the nodes in the order given (timeout_ms each) for CLUSTER NODES and
// merges the first `want` answers (fewer when fewer answer).
Result<ClusterView> discover_view(const std::vector<HostPort>& ask, int timeout_ms, size_t want);

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381".
struct Redirect {
  bool ask = false;
  uint16_t slot = 0;
  HostPort to;
};
std::optional<Redirect> parse_redirect(const std::string& error);

}  // namespace parley::store::valkey
