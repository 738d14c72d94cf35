// The partition feeds: which node each watched partition's feed channel is
// SSUBSCRIBEd on, and what its pushes and losses become (valkey_store.h).
#include "store/valkey/valkey_store.h"

#include <algorithm>
#include <spdlog/spdlog.h>

#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"

namespace parley::store::valkey {

std::string ValkeyStore::feed_name(const std::string& base, const NodePool* pool) const {
  if (!opts_.cluster || !pool) return base;
  return base + ":" + std::to_string(pool->epoch());
}

std::shared_ptr<Subscriber> ValkeyStore::subscriber_locked(const std::string& tag, unsigned& loop) {
  NodePool* pool = route_locked(tag);
  if (!pool) return nullptr;
  size_t i = 0;
  while (nodes_[i].get() != pool) ++i;
  if (subscribers_.size() < nodes_.size()) subscribers_.resize(nodes_.size());
  // Subscribers spread over the loops from the last one down (the pools start at 0).
  loop = static_cast<unsigned>((loops_.size() - 1 - i % loops_.size()));
  if (!subscribers_[i]) {
    Subscriber::Handlers h;
    h.message = [this](const std::string& ch, std::string payload) { on_feed_push(ch, std::move(payload)); };
    h.subscribed = [this](const std::string& ch) { on_feed_subscribed(ch); };
    h.lost = [this](const std::string& ch) { on_feed_lost(ch); };
    h.failed = [this] {
      if (topology_) topology_->request();
    };
    subscribers_[i] = std::make_shared<Subscriber>(loops_.loop(loop), pool->address(), std::move(h));
    sub_loop_[subscribers_[i].get()] = loop;
  }
  return subscribers_[i];
}

void ValkeyStore::watch(const ChannelId& id) {
  if (closed_.load()) return;
  const ChannelKeys k = channel_keys(id, opts_.partitions);
  std::lock_guard lock(route_mu_);
  Watched& w = watched_[k.feed];
  Followed& entry = w.channels[id.key()];
  if (entry.count++ == 0) entry.id = id;
  if (w.on) return;
  unsigned loop = 0;
  auto sub = subscriber_locked(k.tag, loop);
  if (!sub) return;  // no map yet: apply_view subscribes it
  w.on = sub.get();
  w.name = feed_name(k.feed, route_locked(k.tag));
  loops_.run_on(loop, [sub, ch = w.name] { sub->subscribe(ch); });
}

void ValkeyStore::unwatch(const ChannelId& id) {
  const ChannelKeys k = channel_keys(id, opts_.partitions);
  std::lock_guard lock(route_mu_);
  auto w = watched_.find(k.feed);
  if (w == watched_.end()) return;
  auto c = w->second.channels.find(id.key());
  if (c == w->second.channels.end()) return;
  if (--c->second.count > 0) return;
  w->second.channels.erase(c);
  if (!w->second.channels.empty()) return;
  // The partition's last watched channel here: its subscription goes.
  Subscriber* on = w->second.on;
  std::string name = w->second.name;
  watched_.erase(w);
  for (auto& sub : subscribers_) {
    if (sub.get() != on || closed_.load()) continue;
    loops_.run_on(sub_loop_[on], [sub, name] { sub->unsubscribe(name); });
  }
}

namespace {
// Raises what a node knows of a channel; true when its epoch went up here.
bool raise_seen(uint64_t& seen, uint32_t& known, uint64_t seq, uint32_t epoch) {
  seen = std::max(seen, seq);
  if (epoch <= known) return false;
  known = epoch;
  return true;
}

}  // namespace

void log_loss(const ChannelId& id, uint64_t seq, uint32_t epoch) {
  spdlog::warn("channel {}/{}: the valkey store lost acknowledged messages (a replica promoted before it had "
               "them); its seqs go on from {}, epoch {}",
               id.tenant, id.channel, seq, epoch);
}

bool ValkeyStore::note_seen(const ChannelKeys& k, const ChannelKey& key, uint64_t seq, uint32_t epoch,
                            bool quiet) {
  bool raised = false;
  {
    std::lock_guard lock(route_mu_);
    auto w = watched_.find(k.feed);
    if (w == watched_.end()) return false;
    auto c = w->second.channels.find(key.key());
    if (c == w->second.channels.end()) return false;
    raised = raise_seen(c->second.seen, c->second.epoch, seq, epoch);
  }
  if (raised && !quiet) log_loss(key, seq, epoch);
  return raised;
}

void ValkeyStore::on_feed_push(const std::string& feed_channel, std::string payload) {
  if (closed_.load()) return;
  auto item = parse_feed(feed_channel, payload);
  if (!item) return;  // not ours, or damaged: never trusted
  if (item->is_note) {
    if (feed_.note) feed_.note(item->id, std::move(item->note));
    return;
  }
  bool raised = false;
  {
    // Only the current master's channel counts: a master that was hung may still
    // run, and publish under its old epoch's name, what its sockets held before
    // it steps down, and such a push can be on its way when apply_view moves the
    // subscription. A commit missed that way is read back from the history.
    std::lock_guard lock(route_mu_);
    auto w = watched_.find(feed_base(feed_channel));
    if (w == watched_.end() || w->second.name != feed_channel) return;
    auto c = w->second.channels.find(item->id.key());
    if (c != w->second.channels.end()) {
      raised = raise_seen(c->second.seen, c->second.epoch, item->msg.seq, item->msg.epoch);
    }
  }
  if (raised) log_loss(item->id, item->msg.seq, item->msg.epoch);
  if (feed_.message) feed_.message(item->id, std::move(item->msg));
}

void ValkeyStore::on_feed_subscribed(const std::string& feed_channel) {
  if (closed_.load() || !feed_.resync) return;
  std::vector<ChannelId> ids;
  {
    std::lock_guard lock(route_mu_);
    auto w = watched_.find(feed_base(feed_channel));
    if (w == watched_.end() || w->second.name != feed_channel) return;
    for (const auto& [key, e] : w->second.channels) ids.push_back(e.id);
  }
  for (const auto& id : ids) feed_.resync(id);
}

void ValkeyStore::on_feed_lost(const std::string& feed_channel) {
  if (closed_.load()) return;
  {
    std::lock_guard lock(route_mu_);
    auto w = watched_.find(feed_base(feed_channel));
    if (w == watched_.end() || w->second.name != feed_channel) return;
    w->second.on = nullptr;
    w->second.name.clear();
    if (!opts_.cluster) {
      // One node serves the partition for good: subscribe there again.
      unsigned loop = 0;
      auto sub = subscriber_locked(feed_channel.substr(0, feed_channel.find('}') + 1), loop);
      w->second.on = sub.get();
      w->second.name = feed_channel;
      loops_.run_on(loop, [sub, feed_channel] { sub->subscribe(feed_channel); });
      return;
    }
  }
  // The slot moved: the fresh map subscribes it where it lives now (apply_view),
  // and the subscription's confirmation makes the hub read what it missed.
  if (topology_) topology_->request();
}

void ValkeyStore::publish_note(const ChannelId& id, std::string note) {
  if (closed_.load()) return;
  const ChannelKeys k = channel_keys(id, opts_.partitions);
  NodePool* pool;
  std::string name;
  {
    std::lock_guard lock(route_mu_);
    pool = route_locked(k.tag);
    name = feed_name(k.feed, pool);
  }
  std::string cmd = format_command({"SPUBLISH", name, format_note(id.channel, note)});
  begin_op();
  call(pool, id, k.tag, std::move(cmd), true, [this](Result<Reply>) { end_op(); });
}

}  // namespace parley::store::valkey
