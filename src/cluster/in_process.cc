// The in-process cluster (cluster.h): one node alone.
#include <vector>

#include "cluster/cluster.h"

namespace parley::cluster {

namespace {

class LocalBroker final : public Broker {
 public:
  // Nothing is committed elsewhere, and no other node hears a note.
  void watch(const store::ChannelId&, FeedListener&) override {}
  void unwatch(const store::ChannelId&) override {}
  void publish_note(const store::ChannelId&, std::string) override {}
};

class LocalPresence final : public Presence {
 public:
  // The hub knows its own members; no other node has any.
  void set(const store::ChannelId&, const std::string&, const std::string&, int64_t) override {}
  void remove(const store::ChannelId&, const std::string&, const std::string&) override {}
  void read(const store::ChannelId&, PresenceDone done) override { done(std::vector<PresenceEntry>{}); }
};

class LocalLeases final : public Leases {
 public:
  void claim(const store::ChannelId&, const std::string& node, int64_t, ClaimDone done) override { done(node); }
  void release(const store::ChannelId&, const std::string&) override {}
};

// The node's own copy of the sanctions is all there is (session/moderation.h):
// nothing to store elsewhere, nobody else to tell.
class LocalSanctions final : public Sanctions {
 public:
  void listen(SanctionListener&) override {}
  void put(const Sanction&, std::function<void(Status)> done) override { done(Status::ok()); }
  void kick(const Kick&) override {}
  void reload() override {}
};

class InProcess final : public Cluster {
 public:
  Broker& broker() override { return broker_; }
  Presence& presence() override { return presence_; }
  Leases& leases() override { return leases_; }
  Sanctions& sanctions() override { return sanctions_; }

 private:
  LocalBroker broker_;
  LocalPresence presence_;
  LocalLeases leases_;
  LocalSanctions sanctions_;
};

}  // namespace

Cluster& in_process() {
  static InProcess cluster;
  return cluster;
}

}  // namespace parley::cluster
