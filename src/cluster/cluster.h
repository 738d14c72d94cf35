// What the nodes of a deployment share beside the log (store/): the broker
// feed, the presence registry, the leases and the moderation sanctions. One
// node alone has the in-process cluster; nodes sharing a valkey store have
// valkey_cluster.h's.
//
// Only a store that numbers the log (Store::assigns_seq: several nodes write
// it) needs the other nodes; the hub and the events engine ask the cluster for
// nothing otherwise.
#pragma once

#include "cluster/broker.h"
#include "cluster/leases.h"
#include "cluster/presence.h"
#include "cluster/sanctions.h"

namespace parley::cluster {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual Broker& broker() = 0;
  virtual Presence& presence() = 0;
  virtual Leases& leases() = 0;
  virtual Sanctions& sanctions() = 0;
};

// One node and nobody else: nothing to hear from other nodes, nobody else
// present, every lease granted. Stateless; lives as long as the process.
Cluster& in_process();

}  // namespace parley::cluster
