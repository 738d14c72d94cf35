// The presence registry shared by the nodes: one entry per (node, user) in a
// channel, kept until its expiry unless its node refreshes it (a node that died
// stops refreshing, and its entries lapse).
//
// Threads: any thread calls in; set and remove are fire and forget; read
// answers on a registry thread, every entry (expired ones too: the reader
// filters by its own clock).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/channel_id.h"

namespace parley::cluster {

struct PresenceEntry {
  std::string node;
  std::string user;
  int64_t expires_ms = 0;
};
using PresenceDone = std::function<void(Result<std::vector<PresenceEntry>>)>;

class Presence {
 public:
  virtual ~Presence() = default;
  virtual void set(const store::ChannelId& id, const std::string& node, const std::string& user,
                   int64_t expires_ms) = 0;
  virtual void remove(const store::ChannelId& id, const std::string& node, const std::string& user) = 0;
  virtual void read(const store::ChannelId& id, PresenceDone done) = 0;
};

}  // namespace parley::cluster
