// The broker over a valkey store's partition feeds (docs/architecture.md,
// "Cross-node fan-out"): the append script SPUBLISHes each commit on its
// partition's feed channel ({t.pk}:f, and on a cluster {t.pk}:f:<epoch of the
// master>), and notes go there too; this node SSUBSCRIBEs a partition's feed
// while it watches any of its channels, on one Subscriber connection per master
// (valkey_subscriber.h), and hands each push to the listener watching its
// channel.
//
// What it shares with the store, and only through these: where each feed lives
// and when the map moved (store/valkey/feed_route.h: feed_route(), the
// RouteWatcher calls), and the channels followed here with the highest seq seen
// of each (store/valkey/followed_channels.h), which the store's appends send
// and the broker raises from pushes. Failover (issue 30): only pushes on the
// current master's channel count (a resumed master may still publish, under
// its old epoch's name, what it had buffered); a moved feed is unsubscribed on
// the old master and subscribed on the new, and its channels get the store's
// loss check with what this node saw of them; the new subscription's
// confirmation makes every watched channel of it read what it missed (resync).
//
// Threads: any thread calls in; pushes come on the subscribers' loops, map
// changes on the store's topology thread. One lock (mu_) over the watch table
// and the subscribers; while holding it the broker may call the store's
// feed_route() and FollowedChannels, never a listener. Made after the store
// and gone before it.
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/broker.h"
#include "cluster/valkey_subscriber.h"
#include "runtime/loop_group.h"
#include "store/valkey/feed_route.h"
#include "store/valkey/valkey_store.h"

namespace parley::cluster {

class ValkeyBroker final : public Broker, private store::valkey::RouteWatcher {
 public:
  explicit ValkeyBroker(store::valkey::ValkeyStore& store);
  ~ValkeyBroker() override;

  void watch(const store::ChannelId& id, FeedListener& listener) override;
  void unwatch(const store::ChannelId& id) override;
  void publish_note(const store::ChannelId& id, std::string note) override;

 private:
  void routes_changed() override;
  void store_closed() override;

  // The subscriber of the master `route` names (mu_ held), made on first use,
  // and the loop it lives on.
  std::shared_ptr<Subscriber> subscriber_locked(const store::valkey::FeedRoute& route, unsigned& loop);
  FeedListener* listener(const store::ChannelId& id);
  FeedListener* listener_locked(const store::ChannelId& id);  // mu_ held
  void on_push(const std::string& feed_channel, std::string payload);
  void on_subscribed(const std::string& feed_channel);
  // The node took a feed channel away (slot moved): subscribe where it lives now.
  void on_lost(const std::string& feed_channel);
  // "{t.pk}:f:<epoch>" -> "{t.pk}:f".
  static std::string feed_base(const std::string& name) { return name.substr(0, name.find('}') + 3); }

  // The subscribers' handlers reach the broker through this, so that a push
  // already on its way when the broker goes finds nobody (shared: pushes of
  // several loops at once; exclusive: the destructor).
  struct Gate {
    std::shared_mutex mu;
    ValkeyBroker* broker = nullptr;
  };

  struct Watch {
    FeedListener* listener = nullptr;
    uint32_t count = 0;  // watch() calls not yet unwatched
  };
  // A partition feed watched here: its watched channels and where it is subscribed.
  struct Feed {
    std::unordered_map<std::string, store::ChannelId> channels;  // by ChannelId::key()
    Subscriber* on = nullptr;
    std::string name;  // the channel subscribed there (FeedRoute::channel)
  };

  store::valkey::ValkeyStore& store_;
  runtime::LoopGroup& loops_;
  std::shared_ptr<Gate> gate_;
  std::mutex mu_;  // guards everything below
  std::unordered_map<std::string, Watch> listeners_;  // by ChannelId::key()
  std::unordered_map<std::string, Feed> feeds_;       // by partition feed ({t.pk}:f)
  std::vector<std::shared_ptr<Subscriber>> subscribers_;  // by FeedRoute::node, made on first use
  std::unordered_map<Subscriber*, unsigned> sub_loop_;
};

}  // namespace parley::cluster
