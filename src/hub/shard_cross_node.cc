// The Shard's cross-node part, for a store that assigns seqs (several nodes
// share a channel): this node's own appends answered with the store's seq, the
// pushes of committed messages from the store, their hold-back until every
// earlier seq was delivered, the gap fill from the channel's history, and
// presence shared with the other nodes through notes and expiring entries.
// The channel's own sequencing (a store that takes the shard's seq) is in
// shard.cc. Same class, same thread: every method runs on the shard's loop.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/check.h"
#include "common/clock.h"
#include "hub/shard.h"
#include "protocol/encoder.h"
#include "runtime/loop_group.h"

namespace parley::hub {

void Shard::on_committed_shared(Channel* c, Channel::InFlight f, store::AppendOutcome outcome) {
  metrics_.local().observe(metrics::Stage::kAppend, steady_ns() - f.append_start_ns);
  auto reply = [this, &f](PublishOutcome out) {
    to_loop(f.reply_loop, [done = std::move(f.done), out = std::move(out)]() mutable {
      done(std::move(out));
    });
  };
  if (!outcome.status || outcome.dup) {
    // A failure marks nothing: the store assigned no seq, or (an answer lost) it
    // did and the message reaches every node like any other; a retry of the
    // same id is then answered as a duplicate with that seq.
    for (auto& ev : f.after) upstream_->forward(std::move(ev));
    if (!outcome.status) return reply({outcome.status.error()});
    return reply({Status::ok(), outcome.seq, true});
  }
  const uint64_t seq = outcome.seq;
  store::StoredMessage& m = *f.unsequenced;
  auto json = std::make_shared<std::string>();
  protocol::encode_msg(*json, {c->id.channel, seq, m.from, m.id, m.ts_ms, m.body});
  if (f.upstream) f.upstream->seq = seq;
  c->last_seq = std::max(c->last_seq, seq);
  // The ack comes from the store's answer and does not wait for delivery.
  reply({Status::ok(), seq, false});
  hold(*c, seq, Channel::Held{std::move(json), std::move(f.upstream), std::move(f.after)});
}

void Shard::hold(Channel& c, uint64_t seq, Channel::Held h) {
  if (seq <= c.committed_seq) {
    // Delivered already (its push came first): only what rides with it is left.
    if (h.upstream) upstream_->forward(std::move(*h.upstream));
    for (auto& ev : h.after) upstream_->forward(std::move(ev));
    return;
  }
  auto [it, inserted] = c.held.try_emplace(seq, std::move(h));
  if (!inserted) {
    // The push came first and is waiting: this node's own answer brings the
    // upstream events that go out with it.
    Channel::Held& was = it->second;
    if (h.upstream && !was.upstream) was.upstream = std::move(h.upstream);
    for (auto& ev : h.after) was.after.push_back(std::move(ev));
    return;
  }
  if (seq != c.committed_seq + 1) metrics::ThreadMetrics::inc(metrics_.local().fanout_held);
  if (!c.loading) deliver_held(c);
}

void Shard::deliver_held(Channel& c) {
  while (!c.held.empty()) {
    auto it = c.held.begin();
    if (it->first > c.committed_seq + 1) break;
    Channel::Held h = std::move(it->second);
    const uint64_t seq = it->first;
    c.held.erase(it);
    if (seq == c.committed_seq + 1) {
      c.committed_seq = seq;
      c.last_seq = std::max(c.last_seq, seq);
      broadcast(c, ChannelEvent{std::move(h.json), 0, {}, {}, steady_ns()});
    }
    if (h.upstream) upstream_->forward(std::move(*h.upstream));
    for (auto& ev : h.after) upstream_->forward(std::move(ev));
  }
  if (c.held.empty()) {
    c.fill_misses = 0;
    return;
  }
  arm_gap(c);
}

void Shard::arm_gap(Channel& c) {
  if (c.gap_timer || c.filling) return;
  c.gap_timer = true;
  auto t = std::make_shared<boost::asio::steady_timer>(loops_.loop(index_),
                                                        std::chrono::milliseconds(opts_.fanout_gap_ms));
  t->async_wait([this, t, key = c.fanout_key](const boost::system::error_code& ec) {
    if (ec) return;
    auto it = channels_.find(key);
    if (it == channels_.end()) return;
    Channel& ch = *it->second;
    ch.gap_timer = false;
    if (ch.loading || ch.held.empty()) return;
    fill_gap(ch);
  });
}

void Shard::fill_gap(Channel& c) {
  if (c.filling) return;
  c.filling = true;
  metrics::ThreadMetrics::inc(metrics_.local().fanout_gap_fills);
  const uint64_t after = c.committed_seq;
  c.store->read_after(c.id, after, kFillPage, [this, key = c.fanout_key, after](auto r) mutable {
    loops_.run_on(index_, [this, key = std::move(key), after, r = std::move(r)]() mutable {
      on_fill(key, after, std::move(r));
    });
  });
}

void Shard::on_fill(const std::string& key, uint64_t after,
                    Result<std::vector<store::StoredMessage>> r) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(key);
  if (it == channels_.end()) return;
  Channel& c = *it->second;
  c.filling = false;
  if (!r) {
    if (!c.held.empty()) arm_gap(c);  // the store is down: try again later
    return;
  }
  auto& msgs = *r;
  if (c.committed_seq == after && !msgs.empty() && msgs.front().seq > after + 1) {
    // The store no longer holds what this node missed (trimmed from its
    // history before the gap was filled): nothing can deliver it any more.
    metrics::ThreadMetrics::inc(metrics_.local().fanout_gap_skipped, msgs.front().seq - after - 1);
    spdlog::warn("channel {}: seqs {}..{} were trimmed before this node could deliver them",
                 c.id.channel, after + 1, msgs.front().seq - 1);
    c.committed_seq = msgs.front().seq - 1;
  }
  for (auto& m : msgs) {
    if (m.seq <= c.committed_seq || c.held.contains(m.seq)) continue;
    auto json = std::make_shared<std::string>();
    protocol::encode_msg(*json, {c.id.channel, m.seq, m.from, m.id, m.ts_ms, m.body});
    c.held.emplace(m.seq, Channel::Held{std::move(json), nullptr, {}});
  }
  const uint64_t before = c.committed_seq;
  deliver_held(c);
  if (msgs.size() == kFillPage && c.held.empty()) return fill_gap(c);  // more may follow
  if (!c.held.empty() && c.committed_seq == before && ++c.fill_misses >= 3 && msgs.empty()) {
    // Three reads found nothing below what is held: the store lost it.
    const uint64_t to = c.held.begin()->first - 1;
    metrics::ThreadMetrics::inc(metrics_.local().fanout_gap_skipped, to - c.committed_seq);
    spdlog::warn("channel {}: seqs {}..{} are not in the store; skipped", c.id.channel,
                 c.committed_seq + 1, to);
    c.committed_seq = to;
    deliver_held(c);
  }
}

void Shard::on_feed(const store::ChannelId& id, store::StoredMessage msg) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  metrics::ThreadMetrics::inc(metrics_.local().fanout_received);
  auto it = channels_.find(id.key());
  if (it == channels_.end()) return;  // not loaded here: its recovery reads the counter
  Channel& c = *it->second;
  if (msg.seq <= c.committed_seq || c.held.contains(msg.seq)) return;
  if (msg.seq > c.committed_seq + kMaxHeld) {
    // Far ahead: left to the fill, which reads it in order.
    if (!c.loading) arm_gap(c);
    return;
  }
  auto json = std::make_shared<std::string>();
  protocol::encode_msg(*json, {c.id.channel, msg.seq, msg.from, msg.id, msg.ts_ms, msg.body});
  c.last_seq = std::max(c.last_seq, msg.seq);
  hold(c, msg.seq, Channel::Held{std::move(json), nullptr, {}});
}

void Shard::on_resync(const store::ChannelId& id) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(id.key());
  if (it == channels_.end() || it->second->loading) return;
  fill_gap(*it->second);
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
    c.store->presence_set(c.id, node_id_, user, wall_ms() + opts_.presence_ttl_ms);
  } else {
    c.store->presence_remove(c.id, node_id_, user);
  }
  c.store->publish_note(c.id, (joined ? "j" : "l") + node_id_ + '\x1f' + user);
}

void Shard::on_note(const store::ChannelId& id, const std::string& note) {
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

void Shard::reconcile_presence(Channel& c, const std::vector<store::Store::PresenceEntry>& entries) {
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
    for (const auto& [user, n] : c.users) c.store->presence_set(c.id, node_id_, user, expires);
    if (c.members.empty()) continue;  // nobody here to tell
    c.store->presence_read(c.id, [this, key = key](auto r) mutable {
      if (!r) return;
      loops_.run_on(index_, [this, key = std::move(key), entries = std::move(*r)] {
        auto it = channels_.find(key);
        if (it != channels_.end() && !it->second->loading) reconcile_presence(*it->second, entries);
      });
    });
  }
}

}  // namespace parley::hub
