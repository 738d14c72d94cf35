#include "cluster/valkey_broker.h"

#include <utility>

#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"

namespace parley::cluster {

using store::ChannelId;
using store::valkey::ChannelKeys;
using store::valkey::FeedRoute;
using store::valkey::Reply;
using store::valkey::channel_keys;
using store::valkey::format_command;
using store::valkey::format_note;
using store::valkey::parse_feed;

ValkeyBroker::ValkeyBroker(store::valkey::ValkeyStore& store)
    : store_(store), loops_(store.loops()), gate_(std::make_shared<Gate>()) {
  gate_->broker = this;
  store_.set_route_watcher(this);
}

ValkeyBroker::~ValkeyBroker() {
  store_.set_route_watcher(nullptr);
  {
    std::unique_lock lock(gate_->mu);
    gate_->broker = nullptr;
  }
  // After the store's shutdown (a server's stop) the subscribers are closed
  // already, and the loops may be gone.
  if (!store_.closed()) store_closed();
}

std::shared_ptr<Subscriber> ValkeyBroker::subscriber_locked(const FeedRoute& route, unsigned& loop) {
  if (subscribers_.size() <= route.node) subscribers_.resize(route.node + 1);
  // Subscribers spread over the loops from the last one down (the store's pools start at 0).
  loop = static_cast<unsigned>(loops_.size() - 1 - route.node % loops_.size());
  std::shared_ptr<Subscriber>& sub = subscribers_[route.node];
  if (!sub) {
    Subscriber::Handlers h;
    h.message = [g = gate_](const std::string& ch, std::string payload) {
      std::shared_lock lock(g->mu);
      if (g->broker) g->broker->on_push(ch, std::move(payload));
    };
    h.subscribed = [g = gate_](const std::string& ch) {
      std::shared_lock lock(g->mu);
      if (g->broker) g->broker->on_subscribed(ch);
    };
    h.lost = [g = gate_](const std::string& ch) {
      std::shared_lock lock(g->mu);
      if (g->broker) g->broker->on_lost(ch);
    };
    h.failed = [g = gate_] {
      std::shared_lock lock(g->mu);
      if (g->broker) g->broker->store_.request_map();
    };
    sub = std::make_shared<Subscriber>(loops_.loop(loop), route.address, std::move(h));
    sub_loop_[sub.get()] = loop;
  }
  return sub;
}

void ValkeyBroker::watch(const ChannelId& id, FeedListener& l) {
  const ChannelKeys k = channel_keys(id, store_.partitions());
  std::lock_guard lock(mu_);
  Watch& w = listeners_[id.key()];
  w.listener = &l;
  ++w.count;
  if (store_.closed()) return;
  Feed& f = feeds_[k.feed];
  if (f.channels.try_emplace(id.key(), id).second) store_.followed().follow(id);
  if (f.on) return;
  auto route = store_.feed_route(k.feed);
  if (!route) return;  // no map yet: routes_changed subscribes it
  unsigned loop = 0;
  auto sub = subscriber_locked(*route, loop);
  f.on = sub.get();
  f.name = route->channel;
  loops_.run_on(loop, [sub, ch = f.name] { sub->subscribe(ch); });
}

void ValkeyBroker::unwatch(const ChannelId& id) {
  const ChannelKeys k = channel_keys(id, store_.partitions());
  std::lock_guard lock(mu_);
  auto it = listeners_.find(id.key());
  if (it == listeners_.end()) return;
  if (--it->second.count > 0) return;
  listeners_.erase(it);
  auto f = feeds_.find(k.feed);
  if (f == feeds_.end() || f->second.channels.erase(id.key()) == 0) return;
  store_.followed().unfollow(id);
  if (!f->second.channels.empty()) return;
  // The partition's last watched channel here: its subscription goes.
  Subscriber* on = f->second.on;
  std::string name = std::move(f->second.name);
  feeds_.erase(f);
  if (store_.closed()) return;
  for (auto& sub : subscribers_) {
    if (sub.get() != on) continue;
    loops_.run_on(sub_loop_[on], [sub, name] { sub->unsubscribe(name); });
  }
}

void ValkeyBroker::publish_note(const ChannelId& id, std::string note) {
  if (store_.closed()) return;
  const ChannelKeys k = channel_keys(id, store_.partitions());
  auto route = store_.feed_route(k.feed);
  if (!route) return;  // no master known: nobody would hear it
  store_.command(id, format_command({"SPUBLISH", route->channel, format_note(id.channel, note)}),
                 [](Result<Reply>) {});
}

void ValkeyBroker::routes_changed() {
  if (store_.closed()) return;
  std::vector<std::pair<ChannelId, uint64_t>> moved;  // followed channels and their seen
  {
    std::lock_guard lock(mu_);
    // Every watched feed where its slot lives now; one the node took away
    // (on = null) too. The new subscription's confirmation makes its channels
    // read what they may have missed.
    for (auto& [feed, f] : feeds_) {
      auto route = store_.feed_route(feed);
      if (!route) continue;
      unsigned loop = 0;
      auto sub = subscriber_locked(*route, loop);
      if (sub.get() == f.on && route->channel == f.name) continue;
      // A new master for the partition: does it hold what this node saw?
      for (const auto& [key, id] : f.channels) {
        if (const uint64_t seen = store_.followed().seen(id); seen > 0) moved.emplace_back(id, seen);
      }
      if (f.on) {
        for (auto& old : subscribers_) {
          if (old.get() != f.on) continue;
          // What the old channel carries is ignored from now on: a master that
          // was hung may still run what it had buffered before it steps down,
          // and publishes it under its old epoch.
          loops_.run_on(sub_loop_[old.get()], [old, was = f.name] { old->unsubscribe(was); });
        }
      }
      f.on = sub.get();
      f.name = route->channel;
      loops_.run_on(loop, [sub, name = f.name] { sub->subscribe(name); });
    }
  }
  if (!moved.empty()) store_.check_losses(std::move(moved));
}

void ValkeyBroker::store_closed() {
  std::vector<std::pair<std::shared_ptr<Subscriber>, unsigned>> subs;
  {
    std::lock_guard lock(mu_);
    for (auto& sub : subscribers_) {
      if (sub) subs.emplace_back(sub, sub_loop_[sub.get()]);
    }
  }
  for (auto& [sub, loop] : subs) loops_.run_on(loop, [sub] { sub->close(); });
}

FeedListener* ValkeyBroker::listener_locked(const ChannelId& id) {
  auto it = listeners_.find(ChannelId::scratch_key(id.tenant, id.channel));
  return it == listeners_.end() ? nullptr : it->second.listener;
}

FeedListener* ValkeyBroker::listener(const ChannelId& id) {
  std::lock_guard lock(mu_);
  return listener_locked(id);
}

void ValkeyBroker::on_push(const std::string& feed_channel, std::string payload) {
  if (store_.closed()) return;
  auto item = parse_feed(feed_channel, payload);
  if (!item) return;  // not ours, or damaged: never trusted
  if (item->is_note) {
    if (FeedListener* l = listener(item->id)) l->on_note(item->id, std::move(item->note));
    return;
  }
  FeedListener* l;
  {
    // Only the current master's channel counts: a master that was hung may still
    // run, and publish under its old epoch's name, what its sockets held before
    // it steps down, and such a push can be on its way when routes_changed moves
    // the subscription. A commit missed that way is read back from the history.
    std::lock_guard lock(mu_);
    auto f = feeds_.find(feed_base(feed_channel));
    if (f == feeds_.end() || f->second.name != feed_channel) return;
    store_.followed().note_seen(item->id, item->msg.seq, item->msg.epoch, false);
    l = listener_locked(item->id);
  }
  if (l) l->on_message(item->id, std::move(item->msg));
}

void ValkeyBroker::on_subscribed(const std::string& feed_channel) {
  if (store_.closed()) return;
  std::vector<ChannelId> ids;
  {
    std::lock_guard lock(mu_);
    auto f = feeds_.find(feed_base(feed_channel));
    if (f == feeds_.end() || f->second.name != feed_channel) return;
    for (const auto& [key, id] : f->second.channels) ids.push_back(id);
  }
  for (const auto& id : ids) {
    if (FeedListener* l = listener(id)) l->on_resync(id);
  }
}

void ValkeyBroker::on_lost(const std::string& feed_channel) {
  if (store_.closed()) return;
  {
    std::lock_guard lock(mu_);
    auto f = feeds_.find(feed_base(feed_channel));
    if (f == feeds_.end() || f->second.name != feed_channel) return;
    f->second.on = nullptr;
    f->second.name.clear();
    if (!store_.clustered()) {
      // One node serves the partition for good: subscribe there again.
      auto route = store_.feed_route(f->first);
      if (!route) return;
      unsigned loop = 0;
      auto sub = subscriber_locked(*route, loop);
      f->second.on = sub.get();
      f->second.name = feed_channel;
      loops_.run_on(loop, [sub, feed_channel] { sub->subscribe(feed_channel); });
      return;
    }
  }
  // The slot moved: the fresh map subscribes it where it lives now
  // (routes_changed), and the subscription's confirmation makes its channels
  // read what they missed.
  store_.request_map();
}

}  // namespace parley::cluster
