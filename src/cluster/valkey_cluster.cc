#include "cluster/valkey_cluster.h"

#include <mutex>
#include <unordered_map>
#include <utility>

#include "store/valkey/valkey_store.h"

namespace parley::cluster {

namespace {

using store::ChannelId;
using store::valkey::ValkeyStore;

// The store pushes every commit of a watched partition (any of its channels);
// each goes to the listener that watches its channel here, if one does.
class ValkeyBroker final : public Broker {
 public:
  explicit ValkeyBroker(ValkeyStore& store) : store_(store) {
    store::Store::Feed feed;
    feed.message = [this](const ChannelId& id, store::StoredMessage m) {
      if (FeedListener* l = listener(id)) l->on_message(id, std::move(m));
    };
    feed.resync = [this](const ChannelId& id) {
      if (FeedListener* l = listener(id)) l->on_resync(id);
    };
    feed.note = [this](const ChannelId& id, std::string note) {
      if (FeedListener* l = listener(id)) l->on_note(id, std::move(note));
    };
    store_.set_feed(std::move(feed));
  }

  void watch(const ChannelId& id, FeedListener& l) override {
    {
      std::lock_guard lock(mu_);
      auto& w = listeners_[id.key()];
      w.listener = &l;
      ++w.count;
    }
    store_.watch(id);
  }
  void unwatch(const ChannelId& id) override {
    {
      std::lock_guard lock(mu_);
      auto it = listeners_.find(id.key());
      if (it == listeners_.end()) return;
      if (--it->second.count == 0) listeners_.erase(it);
    }
    store_.unwatch(id);
  }
  void publish_note(const ChannelId& id, std::string note) override { store_.publish_note(id, std::move(note)); }

 private:
  FeedListener* listener(const ChannelId& id) {
    const std::string& key = ChannelId::scratch_key(id.tenant, id.channel);
    std::lock_guard lock(mu_);
    auto it = listeners_.find(key);
    return it == listeners_.end() ? nullptr : it->second.listener;
  }

  struct Watch {
    FeedListener* listener = nullptr;
    uint32_t count = 0;
  };
  ValkeyStore& store_;
  std::mutex mu_;  // pushes come on the subscribers' loops, watches on the hub's and the topics'
  std::unordered_map<std::string, Watch> listeners_;
};

class ValkeyPresence final : public Presence {
 public:
  explicit ValkeyPresence(ValkeyStore& store) : store_(store) {}
  void set(const ChannelId& id, const std::string& node, const std::string& user, int64_t expires_ms) override {
    store_.presence_set(id, node, user, expires_ms);
  }
  void remove(const ChannelId& id, const std::string& node, const std::string& user) override {
    store_.presence_remove(id, node, user);
  }
  void read(const ChannelId& id, PresenceDone done) override {
    store_.presence_read(id, [done = std::move(done)](Result<std::vector<store::Store::PresenceEntry>> r) {
      if (!r) return done(r.error());
      std::vector<PresenceEntry> out;
      out.reserve(r->size());
      for (auto& e : *r) out.push_back(PresenceEntry{std::move(e.node), std::move(e.user), e.expires_ms});
      done(std::move(out));
    });
  }

 private:
  ValkeyStore& store_;
};

class ValkeyLeases final : public Leases {
 public:
  explicit ValkeyLeases(ValkeyStore& store) : store_(store) {}
  void claim(const ChannelId& id, const std::string& node, int64_t ttl_ms, ClaimDone done) override {
    store_.claim(id, node, ttl_ms, std::move(done));
  }
  void release(const ChannelId& id, const std::string& node) override { store_.release(id, node); }

 private:
  ValkeyStore& store_;
};

class ValkeyCluster final : public Cluster {
 public:
  explicit ValkeyCluster(ValkeyStore& store) : broker_(store), presence_(store), leases_(store) {}
  Broker& broker() override { return broker_; }
  Presence& presence() override { return presence_; }
  Leases& leases() override { return leases_; }

 private:
  ValkeyBroker broker_;
  ValkeyPresence presence_;
  ValkeyLeases leases_;
};

}  // namespace

std::unique_ptr<Cluster> valkey_cluster(ValkeyStore& store) { return std::make_unique<ValkeyCluster>(store); }

}  // namespace parley::cluster
