// The broker between the nodes of a deployment: what any node commits to a
// channel, and the small notes nodes send each other about it, reach every node
// that watches the channel (docs/architecture.md, "Cross-node fan-out").
//
// A watch names its listener: the hub watches the channels it loads, the events
// engine the partitions of its topics, and each hears only its own (no listener
// looks at names to find out whose a push is).
//
// Threads: any thread calls in; cheap (a subscription is made asynchronously).
// Listeners run on broker threads, never the caller's loop: they post.
#pragma once

#include <string>

#include "store/channel_id.h"
#include "store/store.h"

namespace parley::cluster {

// What the watcher of a channel hears, on any broker thread.
class FeedListener {
 public:
  virtual ~FeedListener() = default;
  // One committed message of the watched channel, in no particular order
  // across channels, maybe twice, maybe never (a lost push): the listener
  // orders and fills gaps from the store.
  virtual void on_message(const store::ChannelId& id, store::StoredMessage msg) = 0;
  // The subscription carrying the channel was (re)established; anything
  // committed before it may have been missed: read after what you hold.
  virtual void on_resync(const store::ChannelId& id) = 0;
  // A note some node (this one too) published for the channel, in no
  // guaranteed order.
  virtual void on_note(const store::ChannelId& id, std::string note) = 0;
};

class Broker {
 public:
  virtual ~Broker() = default;
  // From now on `listener` hears the feed of `id`. Counted: watch twice, unwatch
  // twice, with the same listener, which outlives the last unwatch.
  virtual void watch(const store::ChannelId& id, FeedListener& listener) = 0;
  virtual void unwatch(const store::ChannelId& id) = 0;
  // `note` to every node watching `id`, this one included (fire and forget).
  virtual void publish_note(const store::ChannelId& id, std::string note) = 0;
};

}  // namespace parley::cluster
