// The Shard's cross-node part, for a store that numbers the log (several nodes
// share a channel): this node's own appends answered with the store's seq and
// the pushes of committed messages from the broker (cluster/broker.h), both
// handed to the channel's seqlog::SequencedLog, which follows the log (held
// until every earlier seq was delivered, gaps filled from the channel's
// history), and presence shared with the other nodes through notes and the
// cluster's presence registry.
// The channel's own sequencing (a store that takes the shard's seq) is in
// shard.cc. Same class, same thread: every method runs on the shard's loop,
// except the broker's three calls, which post to it.
#include <algorithm>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/clock.h"
#include "hub/shard.h"
#include "protocol/encoder.h"
#include "runtime/loop_group.h"

namespace parley::hub {

void Shard::on_assigned(Channel* c, Channel::Log::Completion done) {
  Channel::Pending& f = done.pending;
  const uint64_t seq = done.outcome->seq;
  // A store that lost acknowledged messages raised the channel's epoch (and its
  // seqs past them): joins from now on say so (valkey: a failover to a replica
  // that lacked them). Every node learns it from the next message it gets.
  c->epoch = std::max(c->epoch, done.outcome->epoch);
  store::StoredMessage& m = *f.unsequenced;
  auto json = std::make_shared<std::string>();
  m.seq = seq;
  protocol::encode_msg(*json, entry_view(c->id.channel, m));
  if (f.upstream) f.upstream->seq = seq;
  // The ack comes from the store's answer and does not wait for delivery.
  to_loop(f.reply_loop, [done = std::move(f.done), out = std::move(done.outcome)]() mutable {
    done(std::move(out));
  });
  c->log.take(seq, Channel::Held{std::move(json), std::move(f.upstream), std::move(f.after)});
}

void Shard::follow(Channel& c) {
  Channel* ch = &c;
  Channel::Log::FollowHooks hooks;
  hooks.release = [this, ch](uint64_t, Channel::Held& h, bool next) {
    if (next) broadcast(*ch, ChannelEvent{std::move(h.json), 0, {}, {}, steady_ns()});
    // A seq delivered already (its push came first): what rides with it is left.
    if (h.upstream) upstream_->forward(std::move(*h.upstream));
    for (auto& ev : h.after) upstream_->forward(std::move(ev));
  };
  hooks.from_store = [ch](store::StoredMessage& m) {
    ch->epoch = std::max(ch->epoch, m.epoch);  // as in on_assigned
    auto json = std::make_shared<std::string>();
    protocol::encode_msg(*json, entry_view(ch->id.channel, m));
    return Channel::Held{std::move(json), nullptr, {}};
  };
  hooks.passed_over = [this, ch](uint64_t from, uint64_t to) {
    metrics::ThreadMetrics::inc(metrics_.local().fanout_gap_skipped, to - from + 1);
    spdlog::warn("channel {}: seqs {}..{} are no longer in the store; passed over", ch->id.channel,
                 from, to);
  };
  hooks.on_fill = [this] { metrics::ThreadMetrics::inc(metrics_.local().fanout_gap_fills); };
  hooks.ahead = [this] { metrics::ThreadMetrics::inc(metrics_.local().fanout_held); };
  // The push came first and is waiting: this node's own answer brings the
  // upstream events that go out with it.
  hooks.merge = [](Channel::Held& was, Channel::Held& mine) {
    if (mine.upstream && !was.upstream) was.upstream = std::move(mine.upstream);
    for (auto& ev : mine.after) was.after.push_back(std::move(ev));
  };
  c.log.follow(loops_, index_, *c.store, c.id, opts_.follow, std::move(hooks));
}

void Shard::on_message(const store::ChannelId& id, store::StoredMessage msg) {
  loops_.run_on(index_, [this, id, msg = std::move(msg)]() mutable { pushed(id, std::move(msg)); });
}

void Shard::on_resync(const store::ChannelId& id) {
  loops_.run_on(index_, [this, id] { resync(id); });
}

void Shard::on_note(const store::ChannelId& id, std::string note) {
  loops_.run_on(index_, [this, id, note = std::move(note)] { noted(id, note); });
}

void Shard::pushed(const store::ChannelId& id, store::StoredMessage msg) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  metrics::ThreadMetrics::inc(metrics_.local().fanout_received);
  auto it = channels_.find(id.key());
  if (it == channels_.end()) return;  // not loaded here: its recovery reads the counter
  it->second->log.on_feed(msg);
}

void Shard::resync(const store::ChannelId& id) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(id.key());
  if (it == channels_.end()) return;
  it->second->log.on_resync();  // not while it recovers: the recovery reads the counter
}

void Shard::presence_event(Channel& c, const std::string& user, bool joined) {
  auto json = std::make_shared<std::string>();
  const std::string who[] = {user};
  if (joined) {
    protocol::encode_presence(*json, c.id.channel, who, {});
  } else {
    protocol::encode_presence(*json, c.id.channel, {}, who);
  }
  broadcast(c, ChannelEvent{std::move(json), 0, user, {}, steady_ns()});
}

// Notes: "j" or "l", this node's id (hex), 0x1f, the user id.
void Shard::share_presence(Channel& c, const std::string& user, bool joined) {
  if (joined) {
    cluster_.presence().set(c.id, node_id_, user, wall_ms() + opts_.presence_ttl_ms);
  } else {
    cluster_.presence().remove(c.id, node_id_, user);
  }
  cluster_.broker().publish_note(c.id, (joined ? "j" : "l") + node_id_ + '\x1f' + user);
}

void Shard::noted(const store::ChannelId& id, const std::string& note) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  const size_t sep = note.find('\x1f');
  if (note.size() < 3 || (note[0] != 'j' && note[0] != 'l') || sep == std::string::npos) return;
  std::string node = note.substr(1, sep - 1);
  std::string user = note.substr(sep + 1);
  if (node == node_id_ || user.empty() || user.size() > 256) return;
  auto it = channels_.find(id.key());
  if (it == channels_.end() || it->second->loading || !it->second->shared_presence) return;
  Channel& c = *it->second;
  const bool was = c.users.contains(user) || c.remote_users.contains(user);
  if (note[0] == 'j') {
    auto& nodes = c.remote_users[user];
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(std::move(node));
    if (!was) presence_event(c, user, true);
    return;
  }
  auto r = c.remote_users.find(user);
  if (r == c.remote_users.end()) return;
  std::erase(r->second, node);
  if (r->second.empty()) c.remote_users.erase(r);
  if (was && !c.users.contains(user) && !c.remote_users.contains(user)) presence_event(c, user, false);
}

void Shard::reconcile_presence(Channel& c, const std::vector<cluster::PresenceEntry>& entries) {
  const int64_t now = wall_ms();
  std::unordered_map<std::string, std::vector<std::string>> fresh;
  for (const auto& e : entries) {
    if (e.node == node_id_ || e.expires_ms <= now) continue;  // a dead node's entry has expired
    fresh[e.user].push_back(e.node);
  }
  for (const auto& [user, nodes] : fresh) {
    if (!c.remote_users.contains(user) && !c.users.contains(user)) presence_event(c, user, true);
  }
  for (const auto& [user, nodes] : c.remote_users) {
    if (!fresh.contains(user) && !c.users.contains(user)) presence_event(c, user, false);
  }
  c.remote_users = std::move(fresh);
}

void Shard::start_presence() {
  presence_timer_ = std::make_unique<boost::asio::steady_timer>(loops_.loop(index_));
  presence_timer_->expires_after(std::chrono::milliseconds(opts_.presence_ttl_ms / 3));
  presence_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    refresh_presence();
    start_presence();
  });
}

void Shard::refresh_presence() {
  const int64_t expires = wall_ms() + opts_.presence_ttl_ms;
  for (auto& [key, cp] : channels_) {
    Channel& c = *cp;
    if (!c.shared_presence || c.loading) continue;
    if (c.users.empty() && c.remote_users.empty()) continue;
    for (const auto& [user, n] : c.users) cluster_.presence().set(c.id, node_id_, user, expires);
    if (c.members.empty()) continue;  // nobody here to tell
    cluster_.presence().read(c.id, [this, key = key](auto r) mutable {
      if (!r) return;
      loops_.run_on(index_, [this, key = std::move(key), entries = std::move(*r)] {
        auto it = channels_.find(key);
        if (it != channels_.end() && !it->second->loading) reconcile_presence(*it->second, entries);
      });
    });
  }
}

}  // namespace parley::hub
