// ChannelId: which channel of which tenant. The same channel name in two tenants
// is two channels. Used by the hub (routing, its channel tables, the per-loop
// fan-out) and by every store; nothing else builds composite channel keys.
//
// Plain value; any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace parley::store {

struct ChannelId {
  std::string tenant;
  std::string channel;

  bool operator==(const ChannelId&) const = default;

  // One string naming the channel, collision-free: the tenant is length-prefixed
  // ("4:demochat:lobby"), so no choice of bytes in either part can make two ids
  // share a key. The hub's channel tables and the tick batchers are keyed by it.
  std::string key() const { return key_of(tenant, channel); }
  static std::string key_of(std::string_view tenant, std::string_view channel) {
    std::string k = std::to_string(tenant.size());
    k.reserve(k.size() + 1 + tenant.size() + channel.size());
    k.push_back(':');
    k.append(tenant).append(channel);
    return k;
  }
};

struct ChannelIdHash {
  size_t operator()(const ChannelId& id) const {
    const size_t a = std::hash<std::string_view>{}(id.tenant);
    const size_t b = std::hash<std::string_view>{}(id.channel);
    return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  }
};

}  // namespace parley::store
