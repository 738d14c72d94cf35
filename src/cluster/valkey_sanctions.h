// The sanctions of nodes sharing one valkey store (cluster/sanctions.h): one
// hash holds every mute and ban in force (field: sanction_codec.h's, value:
// until_ms), under the tag of a channel no client can name ("$moderation" of
// tenant ""), and changes and kicks go as notes on that channel's feed, which
// every node watches through the broker (a note from a node is ignored by
// itself: it applied the change already). A note may be lost (pub/sub is at
// most once): the hash is read whole again whenever the feed's subscription is
// made again and on reload(), which session/moderation.h calls every few
// seconds, and that read drops expired entries from the hash.
//
// Threads: any thread calls in; the listener hears on the store's loops.
// Lives no longer than the store and the broker.
#pragma once

#include <string>

#include "cluster/broker.h"
#include "cluster/sanctions.h"

namespace parley::store::valkey {
class ValkeyStore;
}

namespace parley::cluster {

class ValkeySanctions final : public Sanctions, private FeedListener {
 public:
  ValkeySanctions(store::valkey::ValkeyStore& store, Broker& broker);
  ~ValkeySanctions() override;

  void listen(SanctionListener& l) override;
  void put(const Sanction& s, std::function<void(Status)> done) override;
  void kick(const Kick& k) override;
  void reload() override;

 private:
  void on_message(const store::ChannelId&, store::StoredMessage) override {}
  void on_resync(const store::ChannelId&) override { reload(); }
  void on_note(const store::ChannelId& id, std::string note) override;

  store::valkey::ValkeyStore& store_;
  Broker& broker_;
  SanctionListener* listener_ = nullptr;
  std::string node_;  // this process, in its notes: a random id per start
  std::string key_;   // the hash
};

}  // namespace parley::cluster
