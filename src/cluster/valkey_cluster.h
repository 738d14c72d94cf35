// The cluster of nodes sharing one valkey store (store/valkey/): the broker
// subscribes to the store's partition feeds (sharded pub/sub channels, to
// which the append script publishes each commit; valkey_broker.h), each push
// handed to the listener watching its channel; presence and leases are keys of
// the channel's partition, sent with ValkeyStore::command() (the store's
// connections and routing: one connection per channel, redirects followed).
//
// Threads: any thread calls in; listeners and answers run on the store's
// loops. Lives no longer than the store, and is made before the first watch.
#pragma once

#include <memory>

#include "cluster/cluster.h"

namespace parley::store::valkey {
class ValkeyStore;
}

namespace parley::cluster {

std::unique_ptr<Cluster> valkey_cluster(store::valkey::ValkeyStore& store);

}  // namespace parley::cluster
