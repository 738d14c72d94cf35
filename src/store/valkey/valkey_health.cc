// Health: which partitions and nodes answer, for /healthz and the metrics.
#include "store/valkey/valkey_store.h"

#include <algorithm>

#include "common/clock.h"
#include "store/valkey/partition_map.h"

namespace parley::store::valkey {

bool ValkeyStore::degraded() const {
  std::lock_guard lock(route_mu_);
  std::vector<bool> seen(nodes_.size(), false);
  for (uint16_t i : slots_) {
    if (i == kUnmapped) return true;
    if (seen[i]) continue;
    seen[i] = true;
    if (nodes_[i]->down() || !nodes_[i]->up()) return true;
  }
  return false;
}

std::vector<std::pair<std::string, bool>> ValkeyStore::partition_stats() const {
  std::vector<std::pair<std::string, bool>> out;
  const std::vector<std::string> tenants = followed_.tenants();
  std::lock_guard lock(route_mu_);
  auto& self = const_cast<ValkeyStore&>(*this);  // route_locked only reads
  for (const auto& t : tenants) {
    for (uint32_t k = 0; k < opts_.partitions; ++k) {
      const std::string tag = hash_tag(t, k);
      out.emplace_back(tag.substr(1, tag.size() - 2), answers(self.route_locked(tag)));
    }
  }
  return out;
}

StoreHealth ValkeyStore::health() const {
  StoreHealth h;
  size_t up = 0, total = 0;
  auto note = [&h](std::string what) {
    ++h.degraded_count;
    if (h.degraded.size() < StoreHealth::kMaxDegraded) h.degraded.push_back(std::move(what));
  };
  for (const auto& [name, ok] : partition_stats()) {
    ++total;
    if (ok) {
      ++up;
    } else {
      note(name);
    }
  }
  if (total == 0) {
    // No channel loaded yet: the nodes the map routes to (every node without a cluster).
    std::lock_guard lock(route_mu_);
    std::vector<bool> mapped(nodes_.size(), !opts_.cluster);
    for (uint16_t i : slots_) {
      if (i != kUnmapped) mapped[i] = true;
    }
    bool unmapped = opts_.cluster && std::find(slots_.begin(), slots_.end(), kUnmapped) != slots_.end();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!mapped[i]) continue;
      ++total;
      if (answers(nodes_[i].get())) {
        ++up;
      } else {
        note("node " + nodes_[i]->name());
      }
    }
    if (unmapped && up > 0) note("slots without a known master");
  }
  auto& since = const_cast<std::atomic<int64_t>&>(down_since_ms_);
  if (up > 0) {
    since.store(0, std::memory_order_relaxed);
    return h;
  }
  int64_t expected = 0;
  since.compare_exchange_strong(expected, wall_ms());
  h.writable = false;
  h.reason = "unreachable";
  h.detail = total == 0 ? "no valkey node answered yet" : "no valkey master answers";
  h.since_ms = since.load(std::memory_order_relaxed);
  return h;
}

std::vector<NodeStats> ValkeyStore::node_stats() const {
  std::vector<NodeStats> out;
  std::lock_guard lock(route_mu_);
  for (const auto& n : nodes_) out.push_back(NodeStats{n->name(), n->queued(), n->in_flight(), n->down()});
  return out;
}

}  // namespace parley::store::valkey
