#include "store/valkey/followed_channels.h"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace parley::store::valkey {

void log_loss(const ChannelId& id, uint64_t seq, uint32_t epoch) {
  spdlog::warn("channel {}/{}: the valkey store lost acknowledged messages (a replica promoted before it had "
               "them); its seqs go on from {}, epoch {}",
               id.tenant, id.channel, seq, epoch);
}

void FollowedChannels::follow(const ChannelId& id) {
  std::lock_guard lock(mu_);
  if (channels_.try_emplace(id.key()).second) ++tenants_[id.tenant];
}

void FollowedChannels::unfollow(const ChannelId& id) {
  std::lock_guard lock(mu_);
  if (channels_.erase(ChannelId::scratch_key(id.tenant, id.channel)) == 0) return;
  auto t = tenants_.find(id.tenant);
  if (--t->second == 0) tenants_.erase(t);
}

uint64_t FollowedChannels::seen(const ChannelId& id) const {
  const std::string& key = ChannelId::scratch_key(id.tenant, id.channel);
  std::lock_guard lock(mu_);
  auto it = channels_.find(key);
  return it == channels_.end() ? 0 : it->second.seen;
}

bool FollowedChannels::note_seen(const ChannelId& id, uint64_t seq, uint32_t epoch, bool quiet) {
  const std::string& key = ChannelId::scratch_key(id.tenant, id.channel);
  {
    std::lock_guard lock(mu_);
    auto it = channels_.find(key);
    if (it == channels_.end()) return false;
    Known& k = it->second;
    k.seen = std::max(k.seen, seq);
    if (epoch <= k.epoch) return false;
    k.epoch = epoch;
  }
  if (!quiet) log_loss(id, seq, epoch);
  return true;
}

std::vector<std::string> FollowedChannels::tenants() const {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto& [tenant, n] : tenants_) out.push_back(tenant);
  return out;
}

}  // namespace parley::store::valkey
