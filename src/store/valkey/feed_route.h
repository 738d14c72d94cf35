// What the valkey store tells the cluster's broker over its partition feeds
// (cluster/valkey_broker.h) about the map, so the broker follows the masters
// without reading the store's routing tables: where a partition's feed lives
// now, and when to look again. The other thing they share is
// FollowedChannels (followed_channels.h).
//
// Lock order: the broker may ask ValkeyStore::feed_route while holding its own
// lock (the store takes its routing lock inside); the store never holds its
// routing lock while it calls a RouteWatcher.
#pragma once

#include <cstddef>
#include <string>

#include "common/host_port.h"

namespace parley::store::valkey {

// The master serving a partition, as the store's map last gave it.
struct FeedRoute {
  size_t node = 0;      // which of the nodes the store has seen (stable: that list only grows)
  HostPort address;
  std::string channel;  // the feed's pub/sub channel there (ValkeyStore::feed_name)
};

// Hears the store's map move (ValkeyStore::set_route_watcher).
class RouteWatcher {
 public:
  virtual ~RouteWatcher() = default;
  // A fresh map was applied (on the store's topology thread, every read of the
  // map whether it moved or not): each feed goes where feed_route says now.
  virtual void routes_changed() = 0;
  // The store has shut down (ValkeyStore::shutdown, on its caller's thread,
  // before the loops stop): subscriptions close.
  virtual void store_closed() = 0;
};

}  // namespace parley::store::valkey
