// ChannelId: which channel of which tenant. The same channel name in two tenants
// is two channels. Used by the hub (routing, its channel tables, the per-loop
// fan-out) and by every store; nothing else builds composite channel keys.
//
// Plain value; any thread.
#pragma once

#include <cstddef>
#include <charconv>
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
    std::string k;
    append_key(k, tenant, channel);
    return k;
  }
  // The key of (tenant, channel) in a per-thread buffer, valid until the
  // thread's next call: a lookup per message reuses it instead of allocating.
  static const std::string& scratch_key(std::string_view tenant, std::string_view channel) {
    thread_local std::string k;
    k.clear();
    append_key(k, tenant, channel);
    return k;
  }

 private:
  // The one spelling of a key: decimal len(tenant) ':' tenant channel.
  static void append_key(std::string& out, std::string_view tenant, std::string_view channel) {
    char len[24];
    char* end = std::to_chars(len, len + sizeof len, tenant.size()).ptr;
    out.reserve(out.size() + static_cast<size_t>(end - len) + 1 + tenant.size() + channel.size());
    out.append(len, end).append(1, ':').append(tenant).append(channel);
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
