#include "hub/shard.h"

#include <algorithm>

#include "common/check.h"
#include "common/clock.h"
#include "net/connection.h"
#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "runtime/loop_group.h"

namespace parley::hub {

namespace {
constexpr int64_t kIdleUnloadMs = 60'000;
constexpr size_t kBackfillFrameBytes = 256 * 1024;
}  // namespace

Shard::Shard(unsigned index, runtime::LoopGroup& loops, std::vector<TickBatcher*> fanouts,
             Stores stores, metrics::Metrics& metrics, ShardOptions opts)
    : index_(index),
      loops_(loops),
      fanouts_(std::move(fanouts)),
      stores_(stores),
      metrics_(metrics),
      opts_(opts),
      outboxes_(loops.size()) {}

std::string Shard::fanout_key(std::string_view tenant, std::string_view ch) {
  std::string key;
  key.reserve(tenant.size() + 1 + ch.size());
  key.append(tenant).append(1, '\x1f').append(ch);
  return key;
}

Channel* Shard::find(const TenantConfig* tenant, std::string_view ch) {
  auto it = channels_.find(fanout_key(tenant->id, ch));
  return it == channels_.end() || it->second->failed ? nullptr : it->second.get();
}

Channel* Shard::open(const TenantConfig* tenant, std::string_view ch, Error* error) {
  std::string key = fanout_key(tenant->id, ch);
  auto it = channels_.find(key);
  if (it != channels_.end() && !it->second->failed) return it->second.get();
  if (it != channels_.end() && !it->second->inflight.empty()) {
    *error = Error{ErrorCode::kUnavailable, "store unavailable", 1000};
    return nullptr;
  }
  const auto& ns = tenant->ns(protocol::channel_namespace(ch));
  store::Store* store = ns.durable ? stores_.durable : stores_.ephemeral;
  const int64_t cutoff = wall_ms() - int64_t{ns.dedupe_window_s} * 1000;
  auto rec = store->recover(store::ChannelKey{tenant->id, std::string(ch)}, cutoff);
  if (!rec) {
    *error = Error{ErrorCode::kUnavailable, "store unavailable", 1000};
    return nullptr;
  }
  if (it == channels_.end()) {
    auto fresh = std::make_unique<Channel>();
    fresh->tenant = tenant;
    fresh->ns = &ns;
    fresh->store = store;
    fresh->key = store::ChannelKey{tenant->id, std::string(ch)};
    fresh->fanout_key = key;
    fresh->loop_members.assign(loops_.size(), 0);
    fresh->idle_since_ms = wall_ms();
    it = channels_.emplace(std::move(key), std::move(fresh)).first;
    channel_count_.fetch_add(1, std::memory_order_relaxed);
  }
  // A fresh channel, or one whose store failed: sequencing and dedupe restart
  // from what the store holds; a failed channel keeps its members.
  Channel* c = it->second.get();
  c->failed = false;
  c->last_seq = c->committed_seq = rec->last_seq;
  c->dedupe.clear();
  c->dedupe_order.clear();
  auto& entries = rec->dedupe;
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.ts_ms < b.ts_ms; });
  for (auto& e : entries) {
    std::string dk = e.from + '\0' + e.id;
    c->dedupe_order.emplace_back(e.ts_ms, dk);
    c->dedupe[std::move(dk)] = Channel::Dedupe{e.seq, e.ts_ms, false, {}, {}};
  }
  return c;
}

void Shard::join(JoinRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  const unsigned loop = req.sub->loop();
  Error err;
  Channel* c = open(req.tenant, req.ch, &err);
  JoinResult result;
  if (!c) {
    result.status = err;
    to_loop(loop, [done = std::move(req.done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
    return;
  }
  const uint64_t conn = req.sub->conn_id();
  const std::string& user = req.sub->user_id();
  bool new_user = false;
  if (c->members.try_emplace(conn, Channel::Member{user, loop}).second) {
    new_user = c->users[user]++ == 0;
    ++c->loop_members[loop];
  }
  result.seq = c->committed_seq;
  if (c->ns->presence) {
    result.has_members = true;
    result.members.reserve(c->users.size());
    for (const auto& [u, n] : c->users) result.members.push_back(u);
  }
  if (req.since) {
    const uint64_t since = *req.since;
    const uint64_t latest = c->committed_seq;
    result.recovered = since <= latest;
    if (since < latest) {
      // At most `history` messages: the newest ones.
      const uint64_t span = latest - since;
      const uint64_t from = span > c->ns->history ? latest - c->ns->history : since;
      const uint32_t want = static_cast<uint32_t>(latest - from);
      auto msgs = c->store->read_after(c->key, from, want);
      if (!msgs) {
        result.recovered = false;
      } else {
        // Newest first within the connection's backfill allowance (see
        // net::Connection::send): an older remainder is left to `history`.
        const uint64_t budget = req.tenant->max_queue_bytes * net::kBackfillAllowance;
        std::vector<std::string> encoded;
        uint64_t expect = from + 1;
        for (const auto& m : *msgs) {
          if (m.seq > latest) break;  // committed in the store, not yet here
          if (m.seq != expect) result.recovered = false;
          expect = m.seq + 1;
          encoded.emplace_back();
          protocol::encode_msg(encoded.back(), {req.ch, m.seq, m.from, m.id, m.ts_ms, m.body});
        }
        size_t first = encoded.size();
        for (uint64_t bytes = 0; first > 0 && bytes + encoded[first - 1].size() + 2 <= budget; --first) {
          bytes += encoded[first - 1].size() + 1;
        }
        if (first > 0) result.recovered = false;
        const size_t chunk = std::min<uint64_t>(kBackfillFrameBytes, req.tenant->max_queue_bytes / 2);
        std::string frame;
        for (size_t i = first; i < encoded.size(); ++i) {
          if (!frame.empty()) frame += ',';
          frame += encoded[i];
          if (frame.size() >= chunk) result.backfill.push_back(std::move(frame)), frame.clear();
        }
        if (!frame.empty()) result.backfill.push_back(std::move(frame));
        if (expect != latest + 1 || from != since) result.recovered = false;
      }
    }
  }
  to_loop(loop, [done = std::move(req.done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
  if (new_user && c->ns->presence) {
    auto json = std::make_shared<std::string>();
    const std::string joined[] = {user};
    protocol::encode_presence(*json, req.ch, joined, {});
    broadcast(*c, ChannelEvent{std::move(json), 0, user, {}, steady_ns()});
  }
}

void Shard::leave(const TenantConfig* tenant, const std::string& ch, uint64_t conn) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(fanout_key(tenant->id, ch));
  if (it == channels_.end()) return;
  remove_member(*it->second, conn);
}

void Shard::remove_member(Channel& c, uint64_t conn) {
  auto m = c.members.find(conn);
  if (m == c.members.end()) return;
  const std::string user = m->second.user;
  --c.loop_members[m->second.loop];
  c.members.erase(m);
  auto u = c.users.find(user);
  if (--u->second == 0) {
    c.users.erase(u);
    if (c.ns->presence) {
      auto json = std::make_shared<std::string>();
      const std::string left[] = {user};
      protocol::encode_presence(*json, c.key.channel, {}, left);
      broadcast(c, ChannelEvent{std::move(json), 0, user, {}, steady_ns()});
    }
  }
  if (c.members.empty()) c.idle_since_ms = wall_ms();
}

void Shard::publish(PublishRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  const int64_t start = steady_ns();
  metrics_.local().observe(metrics::Stage::kQueueWait, start - req.arrived_ns);
  auto reply = [this, &req](PublishOutcome out) {
    to_loop(req.reply_loop, [done = std::move(req.done), out = std::move(out)]() mutable {
      done(std::move(out));
    });
  };
  Error err;
  Channel* c = open(req.tenant, req.ch, &err);
  if (!c) return reply({err});
  if (req.conn != 0 && !c->members.contains(req.conn)) {
    return reply({Error{ErrorCode::kForbidden, "join the channel before publishing"}});
  }
  const int64_t now_ms = wall_ms();
  expire_dedupe(*c, now_ms);
  std::string dedupe_key;
  if (!req.id.empty()) {
    dedupe_key = req.from + '\0' + req.id;
    if (auto d = c->dedupe.find(dedupe_key); d != c->dedupe.end()) {
      if (d->second.pending) {
        // The original is still being written: answer both once it is.
        d->second.waiters.push_back(std::move(req.done));
        d->second.waiter_loops.push_back(req.reply_loop);
        return;
      }
      return reply({Status::ok(), d->second.seq, true});
    }
  }
  if (inflight() >= opts_.append_queue_limit) {
    return reply({Error{ErrorCode::kBackpressure, "append queue full", opts_.backpressure_retry_ms}});
  }
  const uint64_t seq = ++c->last_seq;
  auto json = std::make_shared<std::string>();
  protocol::encode_msg(*json, {req.ch, seq, req.from, req.id, now_ms, req.body});
  if (!dedupe_key.empty()) {
    c->dedupe[dedupe_key] = Channel::Dedupe{seq, now_ms, true, {}, {}};
    c->dedupe_order.emplace_back(now_ms, dedupe_key);
  }
  c->inflight.push_back(Channel::InFlight{seq, std::move(dedupe_key), std::move(json),
                                          req.arrived_ns, steady_ns(), req.reply_loop,
                                          std::move(req.done)});
  inflight_total_.fetch_add(1, std::memory_order_relaxed);
  store::AppendRequest append{c->key,
                              store::StoredMessage{seq, now_ms, std::move(req.from),
                                                   std::move(req.id), std::move(req.body)},
                              c->ns->history, c->ns->dedupe_window_s};
  c->store->append(std::move(append), [this, c](Status s) {
    loops_.run_on(index_, [this, c, s = std::move(s)]() mutable { on_committed(c, std::move(s)); });
  });
}

void Shard::on_committed(Channel* c, Status status) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Channel::InFlight f = std::move(c->inflight.front());
  c->inflight.pop_front();
  inflight_total_.fetch_sub(1, std::memory_order_relaxed);
  auto& m = metrics_.local();
  m.observe(metrics::Stage::kAppend, steady_ns() - f.append_start_ns);

  auto d = f.dedupe_key.empty() ? c->dedupe.end() : c->dedupe.find(f.dedupe_key);
  std::vector<std::function<void(PublishOutcome)>> waiters;
  std::vector<unsigned> waiter_loops;
  if (d != c->dedupe.end()) {
    waiters.swap(d->second.waiters);
    waiter_loops.swap(d->second.waiter_loops);
  }
  PublishOutcome first{Status::ok(), f.seq, false};
  PublishOutcome again{Status::ok(), f.seq, true};
  if (status) {
    c->committed_seq = f.seq;
    if (d != c->dedupe.end()) d->second.pending = false;
    broadcast(*c, ChannelEvent{std::move(f.msg_json), 0, {}, {}, steady_ns()});
  } else {
    // Nothing after this seq can be written without a gap: the store now
    // refuses every append, and the channel reloads from it when idle.
    c->failed = true;
    if (d != c->dedupe.end()) c->dedupe.erase(d);
    first = again = PublishOutcome{status.error()};
  }
  to_loop(f.reply_loop, [done = std::move(f.done), first]() mutable { done(first); });
  for (size_t i = 0; i < waiters.size(); ++i) {
    to_loop(waiter_loops[i], [done = std::move(waiters[i]), again]() mutable { done(again); });
  }
}

void Shard::state(StateRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Channel* c = find(req.tenant, req.ch);
  if (!c || !c->members.contains(req.conn)) return;  // the session checked; a leave raced it
  auto json = std::make_shared<std::string>();
  protocol::encode_state(*json, req.ch, req.from, req.key, req.body);
  std::string coalesce = std::to_string(req.conn);
  coalesce += '\0';
  coalesce += req.key;
  broadcast(*c, ChannelEvent{std::move(json), req.conn, {}, std::move(coalesce), steady_ns()});
}

void Shard::members(const TenantConfig* tenant, const std::string& ch, unsigned reply_loop,
                    MembersDone done) {
  std::vector<std::string> users;
  if (Channel* c = find(tenant, ch)) {
    users.reserve(c->users.size());
    for (const auto& [u, n] : c->users) users.push_back(u);
  }
  to_loop(reply_loop, [done = std::move(done), users = std::move(users)]() mutable {
    done(std::move(users));
  });
}

void Shard::expire_dedupe(Channel& c, int64_t now_ms) {
  const int64_t cutoff = now_ms - int64_t{c.ns->dedupe_window_s} * 1000;
  while (!c.dedupe_order.empty() && c.dedupe_order.front().first < cutoff) {
    auto& [ts, key] = c.dedupe_order.front();
    auto d = c.dedupe.find(key);
    if (d != c.dedupe.end() && d->second.ts_ms == ts && !d->second.pending) c.dedupe.erase(d);
    c.dedupe_order.pop_front();
  }
}

void Shard::broadcast(Channel& c, ChannelEvent ev) {
  for (unsigned l = 0; l < c.loop_members.size(); ++l) {
    if (c.loop_members[l] == 0) continue;
    to_loop(l, [fan = fanouts_[l], key = c.fanout_key, ev]() mutable {
      fan->deliver(key, std::move(ev));
    });
  }
}

void Shard::sweep_idle(int64_t now_ms) {
  for (auto it = channels_.begin(); it != channels_.end();) {
    Channel& c = *it->second;
    if (c.members.empty() && c.inflight.empty() && now_ms - c.idle_since_ms > kIdleUnloadMs) {
      it = channels_.erase(it);
      channel_count_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      expire_dedupe(c, now_ms);
      ++it;
    }
  }
}

void Shard::to_loop(unsigned loop, std::function<void()> fn) {
  outboxes_[loop].push_back(std::move(fn));
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  loops_.run_on(index_, [this] { flush_outboxes(); });
}

void Shard::flush_outboxes() {
  flush_scheduled_ = false;
  for (unsigned l = 0; l < outboxes_.size(); ++l) {
    if (outboxes_[l].empty()) continue;
    loops_.run_on(l, [batch = std::move(outboxes_[l])]() mutable {
      for (auto& fn : batch) fn();
    });
    outboxes_[l].clear();
  }
}

}  // namespace parley::hub
