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
      out_(loops),
      committed_(loops.loop(index), [this](std::vector<Committed>& batch) {
        on_committed_batch(batch);
      }),
      inbound_(loops.loop(index), [](std::vector<std::function<void()>>& batch) {
        for (auto& fn : batch) fn();
      }),
      cluster_(stores.cluster ? *stores.cluster : cluster::in_process()) {
  // Control work before fan-out (issue 9): each drain slice of this loop first
  // takes the store completions and the hub's requests (pubs, joins, ...) that
  // arrived meanwhile, so they wait for at most the slice in progress, not for
  // the loop's queue behind it; the acks they produce for this loop's
  // connections are corked and written first by that slice.
  fanouts_[index_]->set_before_drain([this] {
    committed_.run();
    inbound_.run();
  });
}

// One join's `since` backfill while its pages are read. Shard-owned; the store
// callbacks carry it and post it back to the shard's loop.
struct Shard::Backfill {
  JoinRequest req;
  JoinResult result;
  uint64_t conn = 0;
  uint64_t gen = 0;
  uint64_t from = 0;         // deliver seqs above this
  uint64_t next_before = 0;  // newest-first phase: read below this
  uint64_t top = 0;          // newest seq held; the catch-up reads after it
  bool backward = true;
  uint64_t bytes = 0;
  uint64_t budget = 0;
  std::deque<std::string> msgs;  // encoded, oldest first
};

Channel* Shard::find(const TenantConfig* tenant, std::string_view ch) {
  auto it = channels_.find(store::ChannelId::scratch_key(tenant->id, ch));
  return it == channels_.end() || !it->second->log.ready() || it->second->loading
             ? nullptr
             : it->second.get();
}

void Shard::with_channel(const TenantConfig* tenant, std::string_view ch, ChannelFn fn) {
  std::string key = store::ChannelId::key_of(tenant->id, ch);
  auto it = channels_.find(key);
  if (it != channels_.end()) {
    Channel* c = it->second.get();
    if (c->loading) {
      if (c->waiting.size() >= kMaxWaiting) {
        const Error busy{ErrorCode::kBackpressure, "channel is loading", opts_.backpressure_retry_ms};
        return fn(nullptr, &busy);
      }
      c->waiting.push_back(std::move(fn));
      return;
    }
    if (c->log.ready()) return fn(c, nullptr);
    if (!c->log.needs_recovery()) {  // failed, with appends still to be answered
      const Error down{ErrorCode::kUnavailable, "store unavailable", 1000};
      return fn(nullptr, &down);
    }
  }
  const auto& ns = tenant->ns(protocol::channel_namespace(ch));
  if (it == channels_.end()) {
    store::Store* st = ns.durable ? stores_.durable : stores_.ephemeral;
    auto fresh = std::make_unique<Channel>(st->assigns_seq(), int64_t{ns.dedupe_window_s} * 1000);
    fresh->tenant = tenant;
    fresh->ns = &ns;
    fresh->store = st;
    fresh->id = store::ChannelId{tenant->id, std::string(ch)};
    fresh->fanout_key = key;
    fresh->loop_members.assign(loops_.size(), 0);
    fresh->idle_since_ms = wall_ms();
    if (fresh->store->assigns_seq()) {
      // Before the recovery reads the counter: a push committed after it is held.
      cluster_.broker().watch(fresh->id, *this);
      fresh->watched = true;
      follow(*fresh);
    }
    it = channels_.emplace(key, std::move(fresh)).first;
    channel_count_.fetch_add(1, std::memory_order_relaxed);
  }
  // A fresh channel, or one whose store failed (it keeps its members): sequencing
  // and dedupe restart from what the store holds.
  Channel* c = it->second.get();
  c->loading = true;
  c->log.begin_recovery();  // a follower holds what arrives until the counter is read again
  c->waiting.push_back(std::move(fn));
  c->shared_presence = c->store->assigns_seq() && ns.presence;
  const int64_t cutoff = c->log.dedupe_cutoff(wall_ms());
  c->store->recover(c->id, cutoff, [this, key = std::move(key), id = c->id,
                                    presence = c->shared_presence](auto rec) mutable {
    if (!presence || !rec) {
      return loops_.run_on(index_, [this, key = std::move(key), rec = std::move(rec)]() mutable {
        on_recovered(key, std::move(rec));
      });
    }
    // The other nodes' members, so that a join here lists them.
    cluster_.presence().read(id, [this, key = std::move(key), rec = std::move(rec)](auto members) mutable {
      std::vector<cluster::PresenceEntry> entries;
      if (members) entries = std::move(*members);
      loops_.run_on(index_, [this, key = std::move(key), rec = std::move(rec),
                             entries = std::move(entries)]() mutable {
        on_recovered(key, std::move(rec), std::move(entries));
      });
    });
  });
}

void Shard::on_recovered(const std::string& key, Result<store::ChannelRecovery> rec,
                         std::vector<cluster::PresenceEntry> presence) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(key);
  PARLEY_CHECK(it != channels_.end() && it->second->loading);  // never unloaded while loading
  Channel* c = it->second.get();
  c->loading = false;
  auto waiting = std::move(c->waiting);
  c->waiting.clear();
  if (!rec) {
    const Error down{ErrorCode::kUnavailable, "store unavailable", 1000};
    c->log.recovery_failed();
    for (auto& fn : waiting) fn(nullptr, &down);
    // Nobody holds it (a join would have run by now): forget it, so that the next
    // use tries the store again.
    auto again = channels_.find(key);
    if (again != channels_.end() && again->second.get() == c && !c->loading &&
        c->members.empty() && c->log.inflight() == 0 && c->backfills == 0 && !c->moderating) {
      forget(again);
    }
    return;
  }
  c->epoch = rec->epoch;
  // Sequencing and dedupe go on from what the store holds; pushes that came
  // while the counter was read: the newer ones go out now.
  c->log.recovered(*rec);
  if (c->shared_presence) reconcile_presence(*c, presence);
  for (auto& fn : waiting) fn(c, nullptr);
}

void Shard::forget(std::unordered_map<std::string, std::unique_ptr<Channel>>::iterator it) {
  if (it->second->watched) cluster_.broker().unwatch(it->second->id);
  channels_.erase(it);
  channel_count_.fetch_sub(1, std::memory_order_relaxed);
}

void Shard::join(JoinRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  if (Channel* ready = find(req.tenant, req.ch)) return join_loaded(ready, std::move(req));
  std::string ch = req.ch;
  const TenantConfig* tenant = req.tenant;
  with_channel(tenant, ch, [this, req = std::move(req)](Channel* c, const Error* err) mutable {
    if (c) return join_loaded(c, std::move(req));
    JoinResult result;
    result.status = *err;
    const unsigned loop = req.sub->loop();
    to_loop(loop, [done = std::move(req.done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  });
}

void Shard::join_loaded(Channel* c, JoinRequest req) {
  const unsigned loop = req.sub->loop();
  const uint64_t conn = req.sub->conn_id();
  const std::string& user = req.sub->user_id();
  bool new_user = false;
  auto [m, inserted] = c->members.try_emplace(conn, Channel::Member{user, loop, false, 0});
  if (inserted) new_user = c->users[user]++ == 0;
  const uint64_t gen = ++m->second.join_gen;

  JoinResult result;
  const uint64_t latest = c->log.committed();
  const bool reads = req.since && *req.since < latest;
  if (req.since) result.recovered = *req.since <= latest;
  if (new_user && c->ns->presence) {
    if (c->shared_presence) share_presence(*c, user, true);
    // Present on another node already: nobody hears of it again.
    if (!c->remote_users.contains(user)) presence_event(*c, user, true);
  }
  if (!reads) return finish_join(c, std::move(req), std::move(result), true);

  // A member already live (a join again, with `since`) stops receiving live events
  // until its backfill is out, so that the backfill precedes them.
  if (m->second.live) {
    m->second.live = false;
    --c->loop_members[loop];
    to_loop(loop, [fan = fanouts_[loop], link = req.link] {
      if (!link || !link->registered) return;
      fan->remove_member(link->fanout_key, link->conn);
      link->registered = false;
    });
  }
  auto b = std::make_shared<Backfill>();
  const uint64_t since = *req.since;
  // At most `history` messages: the newest ones.
  b->from = latest - since > c->ns->history ? latest - c->ns->history : since;
  if (b->from != since) result.recovered = false;
  b->next_before = latest + 1;
  b->top = latest;
  b->conn = conn;
  b->gen = gen;
  // Newest first within the connection's backfill allowance (net::Connection::send):
  // an older remainder is left to `history`. The allowance bounds what is read,
  // not only what is sent.
  b->budget = req.tenant->max_queue_bytes * net::kBackfillAllowance;
  b->result = std::move(result);
  b->req = std::move(req);
  ++c->backfills;
  backfill_step(c, std::move(b));
}

void Shard::backfill_step(Channel* c, std::shared_ptr<Backfill> b) {
  auto m = c->members.find(b->conn);
  const bool current = m != c->members.end() && m->second.join_gen == b->gen;
  auto read_back = [this, c, b](auto r) mutable {
    loops_.run_on(index_, [this, c, b = std::move(b), r = std::move(r)]() mutable {
      on_backfill_page(c, std::move(b), std::move(r));
    });
  };
  if (current && b->backward && b->next_before - 1 > b->from && b->bytes < b->budget) {
    const uint64_t n = std::min<uint64_t>(kBackfillPage, b->next_before - 1 - b->from);
    c->store->read_before(c->id, b->next_before, static_cast<uint32_t>(n), std::move(read_back));
    return;
  }
  b->backward = false;
  if (current && b->top < c->log.committed()) {
    const uint64_t n = std::min<uint64_t>(kBackfillPage, c->log.committed() - b->top);
    c->store->read_after(c->id, b->top, static_cast<uint32_t>(n), std::move(read_back));
    return;
  }
  --c->backfills;
  if (c->members.empty()) c->idle_since_ms = wall_ms();
  // Frames of at most kBackfillFrameBytes, each one JSON array.
  const size_t chunk =
      std::min<uint64_t>(kBackfillFrameBytes, std::max<uint64_t>(1, b->req.tenant->max_queue_bytes / 2));
  std::string frame;
  for (auto& e : b->msgs) {
    if (!frame.empty()) frame += ',';
    frame += e;
    if (frame.size() >= chunk) b->result.backfill.push_back(std::move(frame)), frame.clear();
  }
  if (!frame.empty()) b->result.backfill.push_back(std::move(frame));
  finish_join(c, std::move(b->req), std::move(b->result), current);
}

void Shard::on_backfill_page(Channel* c, std::shared_ptr<Backfill> b,
                             Result<std::vector<store::StoredMessage>> page) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  if (!page) {
    // What was missed cannot be delivered: the join fails, retryable.
    --c->backfills;
    b->result = JoinResult{};
    b->result.status = Error{ErrorCode::kUnavailable, "store unavailable", 1000};
    // Not live; the session drops its membership on the error, which leaves.
    return finish_join(c, std::move(b->req), std::move(b->result), false);
  }
  const auto& msgs = *page;
  const std::string_view ch = b->req.ch;
  if (b->backward) {
    // Oldest first, ending right below next_before; newest first into the front.
    uint64_t expect = b->next_before - 1;
    size_t taken = 0;
    for (size_t i = msgs.size(); i > 0; --i) {
      const auto& msg = msgs[i - 1];
      if (msg.seq != expect) break;  // trimmed (or a hole): older ones are gone
      std::string e;
      protocol::encode_msg(e, entry_view(ch, msg));
      if (b->bytes + e.size() + 2 > b->budget) {  // the array's brackets and comma, as sent
        b->backward = false;
        break;
      }
      b->bytes += e.size() + 1;
      b->msgs.push_front(std::move(e));
      b->next_before = msg.seq;
      --expect;
      ++taken;
    }
    if (taken < msgs.size() || msgs.empty()) b->backward = false;
    if (b->next_before - 1 > b->from && !b->backward) b->result.recovered = false;
  } else {
    // Catching up with what was committed meanwhile: these the member would have
    // had live, so they go in, and the oldest leave when over budget.
    const uint64_t was_top = b->top;
    uint64_t expect = b->top + 1;
    for (const auto& msg : msgs) {
      if (msg.seq > c->log.committed()) break;
      if (msg.seq != expect) break;
      std::string e;
      protocol::encode_msg(e, entry_view(ch, msg));
      b->bytes += e.size() + 1;
      b->msgs.push_back(std::move(e));
      b->top = msg.seq;
      ++expect;
    }
    while (b->bytes > b->budget && b->msgs.size() > 1) {
      b->bytes -= b->msgs.front().size() + 1;
      b->msgs.pop_front();
      b->result.recovered = false;
    }
    if (b->top == was_top && b->top < c->log.committed()) {
      // The committed range is no longer in the store (trimmed meanwhile): skip
      // it rather than read forever.
      b->result.recovered = false;
      b->top = c->log.committed();
    }
  }
  backfill_step(c, std::move(b));
}

void Shard::finish_join(Channel* c, JoinRequest req, JoinResult result, bool go_live) {
  const unsigned loop = req.sub->loop();
  if (result.status) {
    result.seq = c->log.committed();
    result.epoch = c->epoch;
    if (c->ns->presence) {
      result.has_members = true;
      result.members.reserve(c->users.size() + c->remote_users.size());
      for (const auto& [u, n] : c->users) result.members.push_back(u);
      for (const auto& [u, nodes] : c->remote_users) {
        if (!c->users.contains(u)) result.members.push_back(u);
      }
    }
    auto m = c->members.find(req.sub->conn_id());
    if (go_live && m != c->members.end() && !m->second.live) {
      m->second.live = true;
      ++c->loop_members[loop];
    }
  }
  // One task on the member's loop: registration, `joined`, backfill. Everything
  // this shard broadcasts to the channel from now on is queued behind it.
  to_loop(loop, [fan = fanouts_[loop], sub = std::move(req.sub), link = std::move(req.link),
                 done = std::move(req.done), result = std::move(result)]() mutable {
    const bool stay = result.status && link && !link->left;
    if (stay) {
      fan->add_member(link->fanout_key, link->tick_ms, sub);
      link->registered = true;
    }
    auto backfill = std::move(result.backfill);
    done(std::move(result));
    if (!stay || link->left) return;
    for (auto& chunk : backfill) {
      std::string out;
      protocol::encode_batch(out, chunk);
      net::OutFrame f(std::move(out));
      f.backfill = true;
      sub->send(std::move(f));
    }
  });
}

void Shard::leave(const TenantConfig* tenant, const std::string& ch, uint64_t conn) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(store::ChannelId::key_of(tenant->id, ch));
  if (it == channels_.end()) return;
  Channel& c = *it->second;
  if (c.loading) {
    // The join it undoes may be waiting for the load: stay behind it.
    c.waiting.push_back([this, conn](Channel* ready, const Error*) {
      if (ready) remove_member(*ready, conn);
    });
    return;
  }
  remove_member(c, conn);
}

void Shard::remove_member(Channel& c, uint64_t conn) {
  auto m = c.members.find(conn);
  if (m == c.members.end()) return;
  const std::string user = m->second.user;
  if (m->second.live) --c.loop_members[m->second.loop];
  c.members.erase(m);
  auto u = c.users.find(user);
  if (--u->second == 0) {
    c.users.erase(u);
    if (c.ns->presence) {
      if (c.shared_presence) share_presence(c, user, false);
      if (!c.remote_users.contains(user)) presence_event(c, user, false);
    }
  }
  if (c.members.empty()) c.idle_since_ms = wall_ms();
}

void Shard::publish(PublishRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  const int64_t start = steady_ns();
  metrics_.local().observe(metrics::Stage::kQueueWait, start - req.arrived_ns);
  // The common case, a loaded channel, without wrapping the request in a closure.
  if (Channel* ready = find(req.tenant, req.ch)) return publish_loaded(ready, std::move(req));
  std::string ch = req.ch;
  const TenantConfig* tenant = req.tenant;
  with_channel(tenant, ch, [this, req = std::move(req)](Channel* c, const Error* err) mutable {
    if (c) return publish_loaded(c, std::move(req));
    to_loop(req.reply_loop, [done = std::move(req.done), out = store::AppendOutcome{*err}]() mutable {
      done(std::move(out));
    });
  });
}

void Shard::publish_loaded(Channel* c, PublishRequest req) {
  if (req.conn != 0 && !c->members.contains(req.conn)) {
    return reply(req, Error{ErrorCode::kForbidden, "join the channel before publishing"});
  }
  // A client's pub takes no seq over its channel's rate; the API's are not counted.
  if (const uint32_t rate = c->ns->channel_pub_rate; rate != 0 && req.conn != 0) {
    if (c->pub_rate != rate) {
      c->pub_bucket = auth::TokenBucket(rate);
      c->pub_rate = rate;
    }
    if (const int wait = c->pub_bucket.take(steady_ns())) {
      metrics::ThreadMetrics::inc(metrics_.local().channel_rate_limited);
      return reply(req, Error{ErrorCode::kRateLimited, "channel publish rate exceeded", wait});
    }
  }
  if (c->log.store_numbers()) return publish_unnumbered(c, std::move(req));
  publish_numbered(c, std::move(req));
}

void Shard::reply(PublishRequest& req, store::AppendOutcome out) {
  to_loop(req.reply_loop, [done = std::move(req.done), out = std::move(out)]() mutable {
    done(std::move(out));
  });
}

std::unique_ptr<UpstreamEvent> Shard::upstream_msg(const Channel& c, const PublishRequest& req,
                                                   int64_t now_ms, uint64_t seq) const {
  // Emitted on the channel's own shard once written: in seq order. The API's
  // own publishes (conn 0) are not echoed to the app server.
  if (!upstream_ || req.conn == 0 || !c.ns->forwards(kForwardMsg)) return nullptr;
  return std::make_unique<UpstreamEvent>(UpstreamEvent{UpstreamEventType::kMsg, req.tenant, c.ns,
                                                       req.ch, req.from, req.conn, now_ms, seq,
                                                       req.id, {}, req.body});
}

void Shard::publish_numbered(Channel* c, PublishRequest req) {
  const int64_t now_ms = wall_ms();
  c->log.expire(now_ms);
  store::DedupeKey dedupe_key;
  if (!req.id.empty()) {
    dedupe_key = store::DedupeKey(req.from, req.id);
    uint64_t seq = 0;
    switch (c->log.seen(dedupe_key, seq, [&] {
      return Channel::DedupeWaiter{std::move(req.done), req.reply_loop};
    })) {
      case Channel::Log::Seen::kWaits:
        return;  // the original is still being written: answered with it
      case Channel::Log::Seen::kDuplicate:
        return reply(req, store::Appended{seq, true});
      case Channel::Log::Seen::kNew:
        break;
    }
  }
  if (inflight() >= opts_.append_queue_limit) {
    return reply(req, Error{ErrorCode::kBackpressure, "append queue full", opts_.backpressure_retry_ms});
  }
  const uint64_t seq = c->log.next_seq();
  auto upstream = upstream_msg(*c, req, now_ms, seq);
  auto json = std::make_shared<std::string>();
  protocol::encode_msg(*json, {req.ch, seq, req.from, req.id, now_ms, req.body});
  append_numbered(c, std::move(dedupe_key),
                  store::StoredMessage{seq, now_ms, std::move(req.from), std::move(req.id),
                                       std::move(req.body)},
                  Channel::Pending{std::move(json), req.arrived_ns, steady_ns(), req.reply_loop,
                                   std::move(req.done), std::move(upstream), {}, nullptr},
                  std::nullopt);
}

void Shard::append_numbered(Channel* c, store::DedupeKey dedupe_key, store::StoredMessage msg,
                            Channel::Pending pending, std::optional<store::StoredMessage> amended) {
  const uint64_t seq = msg.seq;
  PARLEY_CHECK(seq == c->log.next_seq());
  c->log.append(std::move(dedupe_key), msg.ts_ms, std::move(pending));
  inflight_total_.fetch_add(1, std::memory_order_relaxed);
  store::AppendRequest append{c->id, std::move(msg), c->ns->history, c->ns->dedupe_window_s,
                              c->ns->durable ? 0u : c->ns->history_ttl_s, std::move(amended)};
  // Completes on the store's thread (or inline): a group commit's completions
  // reach this loop as one batch. An inline completion (the memory store) of the
  // channel's only append in flight is handled right here, after append()
  // returns: no completion of this channel can be queued before it, and it
  // saves the inbox's task.
  std::optional<store::AppendOutcome> inline_done;
  const uint64_t gen = c->log.inflight() == 1 ? ++append_gen_ : 0;
  inline_gen_ = gen;
  c->store->append(std::move(append), [this, c, gen, &inline_done](store::AppendOutcome out) {
    // inline_gen_ is this append's only while append() runs: a completion
    // that comes later (another thread, or posted back here) takes the inbox.
    // Only this loop's thread reads inline_gen_ (the loop test comes first).
    if (runtime::LoopGroup::current() == static_cast<int>(index_) && gen != 0 &&
        inline_gen_ == gen) {
      inline_gen_ = 0;
      inline_done = std::move(out);
      return;
    }
    committed_.push(Committed{c, std::move(out)});
  });
  inline_gen_ = 0;
  // The ack and the event leave through the outbox at the end of this batch of
  // requests (runtime/outbox.h): publishes of the same batch share its posts.
  if (inline_done) on_committed(c, std::move(*inline_done));
}

void Shard::publish_unnumbered(Channel* c, PublishRequest req) {
  // The store's script sequences and dedupes for every node: seq 0 asks it to.
  if (inflight() >= opts_.append_queue_limit) {
    return reply(req, Error{ErrorCode::kBackpressure, "append queue full", opts_.backpressure_retry_ms});
  }
  const int64_t now_ms = wall_ms();
  auto upstream = upstream_msg(*c, req, now_ms, 0);
  append_unnumbered(c, store::StoredMessage{0, now_ms, std::move(req.from), std::move(req.id),
                                            std::move(req.body)},
                    Channel::Pending{nullptr, req.arrived_ns, steady_ns(), req.reply_loop,
                                     std::move(req.done), std::move(upstream), {}, nullptr},
                    std::nullopt);
}

void Shard::append_unnumbered(Channel* c, store::StoredMessage msg, Channel::Pending pending,
                              std::optional<store::StoredMessage> amended) {
  pending.unsequenced = std::make_unique<store::StoredMessage>(msg);
  const int64_t now_ms = msg.ts_ms;
  c->log.append({}, now_ms, std::move(pending));
  inflight_total_.fetch_add(1, std::memory_order_relaxed);
  store::AppendRequest append{c->id, std::move(msg), c->ns->history, c->ns->dedupe_window_s, 0u,
                              std::move(amended)};
  c->store->append(std::move(append), [this, c](store::AppendOutcome out) {
    committed_.push(Committed{c, std::move(out)});
  });
}

void Shard::on_committed_batch(std::vector<Committed>& batch) {
  // Acks and events leave at the end of the batch (runtime::Inbox's scope):
  // this loop's share runs then, each other loop gets one post.
  for (auto& done : batch) on_committed(done.channel, std::move(done.outcome));
}

void Shard::on_committed(Channel* c, store::AppendOutcome outcome) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto done = c->log.complete(std::move(outcome));
  inflight_total_.fetch_sub(1, std::memory_order_relaxed);
  Channel::Pending& f = done.pending;
  metrics_.local().observe(metrics::Stage::kAppend, steady_ns() - f.append_start_ns);
  // The channel's next moderation op reads its target after this one's
  // answer: it sees this one's change (shard_moderation.cc).
  if (f.moderation) moderation_next(c);
  if (done.kind == Channel::Log::Completion::kAssigned) return on_assigned(c, std::move(done));
  if (done.kind == Channel::Log::Completion::kCommitted) {
    broadcast(*c, ChannelEvent{std::move(f.msg_json), 0, {}, {}, steady_ns()});
    if (f.upstream) upstream_->forward(std::move(*f.upstream));
  }
  // A failure (the log failed: nothing after it is written, the channel reloads
  // once its appends are answered), or, the store numbering, a duplicate.
  for (auto& ev : f.after) upstream_->forward(std::move(ev));
  to_loop(f.reply_loop, [done = std::move(f.done), out = std::move(done.outcome)]() mutable {
    done(std::move(out));
  });
  if (done.waiters.empty()) return;
  const store::AppendOutcome again = done.for_waiters();
  for (auto& w : done.waiters) {
    to_loop(w.loop, [done = std::move(w.done), again]() mutable { done(again); });
  }
}

void Shard::history(HistoryRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(store::ChannelId::key_of(req.tenant->id, req.ch));
  if (it != channels_.end() && it->second->loading) {
    // Its committed seq is being recovered: read once it is known.
    it->second->waiting.push_back([this, req = std::move(req)](Channel* c, const Error*) mutable {
      history_loaded(c, std::move(req));
    });
    return;
  }
  history_loaded(it == channels_.end() ? nullptr : it->second.get(), std::move(req));
}

void Shard::history_loaded(Channel* c, HistoryRequest req) {
  // The cut: nothing above the committed seq (written, not yet acknowledged) is
  // served, exactly as the join backfill. A channel not loaded here has nothing
  // in flight, so everything its store holds is committed.
  const uint64_t cut = c != nullptr ? c->log.committed() : UINT64_MAX;
  const auto& ns = req.tenant->ns(protocol::channel_namespace(req.ch));
  store::Store* st = ns.durable ? stores_.durable : stores_.ephemeral;
  const store::ChannelId id{req.tenant->id, req.ch};
  const bool forward = req.after.has_value();
  const unsigned reply_loop = req.reply_loop;
  // Completes on a store thread (or inline): encoded there, answered on the
  // asking loop; the shard's loop does no more than pick the cut.
  auto done = [this, cut, forward, reply_loop, ch = req.ch, max_bytes = req.max_bytes,
               done = std::move(req.done)](Result<std::vector<store::StoredMessage>> r) mutable {
    HistoryResult out;
    if (!r) {
      out.status = Error{ErrorCode::kUnavailable, "store unavailable", 1000};
    } else {
      auto page = encode_page(ch, *r, cut, max_bytes, forward);
      out.msgs_json = std::move(page.msgs_json);
      out.count = page.count;
    }
    loops_.run_on(reply_loop, [done = std::move(done), out = std::move(out)]() mutable {
      done(std::move(out));
    });
  };
  if (forward) {
    if (*req.after >= cut) return done(std::vector<store::StoredMessage>{});
    st->read_after(id, *req.after, req.limit, std::move(done));
  } else {
    const uint64_t before = cut == UINT64_MAX ? *req.before : std::min(*req.before, cut + 1);
    st->read_before(id, before, req.limit, std::move(done));
  }
}

void Shard::forward_upstream(UpstreamEvent ev) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  if (!upstream_) return;
  Channel* c = find(ev.tenant, ev.ch);
  if (Channel::Pending* p = c ? c->log.newest() : nullptr) {
    p->after.push_back(std::move(ev));
    return;
  }
  upstream_->forward(std::move(ev));
}

void Shard::state(StateRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Channel* c = find(req.tenant, req.ch);
  if (!c || !c->members.contains(req.conn)) return;  // the session checked; a leave raced it
  auto json = std::make_shared<std::string>();
  protocol::encode_state(*json, req.ch, req.from, req.key, req.body,
                         req.pos ? &*req.pos : nullptr);
  std::string coalesce = std::to_string(req.conn);
  coalesce += '\0';
  coalesce += req.key;
  std::optional<Cell> cell;
  // The live config: a reload that changes aoi_cell regrids from the next state on.
  const auto& ns = req.tenant->ns(protocol::channel_namespace(req.ch));
  if (req.pos && ns.aoi_cell > 0) cell = cell_of(*req.pos, ns.aoi_cell);
  broadcast(*c, ChannelEvent{std::move(json), req.conn, {}, std::move(coalesce), steady_ns(),
                             cell, ns.state_delta, static_cast<uint32_t>(req.body.size())});
}

void Shard::members(const TenantConfig* tenant, const std::string& ch, unsigned reply_loop,
                    MembersDone done) {
  std::vector<std::string> users;
  if (Channel* c = find(tenant, ch)) {
    users.reserve(c->users.size() + c->remote_users.size());
    for (const auto& [u, n] : c->users) users.push_back(u);
    for (const auto& [u, nodes] : c->remote_users) {
      if (!c->users.contains(u)) users.push_back(u);
    }
  }
  to_loop(reply_loop, [done = std::move(done), users = std::move(users)]() mutable {
    done(std::move(users));
  });
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
  if (sweeping_) return;
  sweeping_ = true;
  sweep_slice(now_ms, 0);
}

void Shard::sweep_slice(int64_t now_ms, size_t from) {
  // Channels looked at per task: ~a millisecond of work.
  constexpr size_t kSlice = 2048;
  // By bucket, so that the walk can resume after other tasks ran: an insert
  // between two slices may rehash and move channels to buckets already
  // walked (or not yet), which only means one is looked at by the next
  // sweep instead of this one.
  std::vector<std::string> idle;
  size_t seen = 0;
  size_t b = from;
  const size_t buckets = channels_.bucket_count();
  for (; b < buckets && seen < kSlice; ++b) {
    for (auto it = channels_.begin(b); it != channels_.end(b); ++it, ++seen) {
      Channel& c = *it->second;
      if (c.loading) continue;
      if (c.members.empty() && c.log.inflight() == 0 && c.backfills == 0 && c.log.idle() &&
          !c.moderating &&
          now_ms - c.idle_since_ms > opts_.idle_unload_ms) {
        idle.push_back(it->first);
      } else {
        c.log.expire(now_ms);
      }
    }
  }
  for (const auto& key : idle) forget(channels_.find(key));
  if (b >= buckets) {
    sweeping_ = false;
    return;
  }
  loops_.run_on(index_, [this, now_ms, b] { sweep_slice(now_ms, b); });
}

}  // namespace parley::hub
