#include "hub/hub.h"

#include <cstdio>
#include <random>

#include "common/check.h"
#include "common/clock.h"
#include "common/fnv1a.h"
#include "protocol/decoder.h"

namespace parley::hub {

namespace {
// What a request refused by a closed hub hears: the server is draining, and
// clients reconnect (to another node, or this one restarted) after a pause.
Error draining() { return Error{ErrorCode::kUnavailable, "server is draining", 500}; }
}  // namespace

Hub::Hub(runtime::LoopGroup& loops, Stores stores, metrics::Metrics& metrics, ShardOptions opts)
    : loops_(loops) {
  std::vector<TickBatcher*> views;
  for (unsigned i = 0; i < loops.size(); ++i) {
    // The view is created here but used only on its loop (the Metrics slot of
    // that loop is the one ThreadMetrics it may touch).
    fanouts_.push_back(std::make_unique<TickBatcher>(i, loops.loop(i), metrics.slot(i)));
    views.push_back(fanouts_.back().get());
  }
  for (unsigned i = 0; i < loops.size(); ++i) {
    shards_.push_back(std::make_unique<Shard>(i, loops, views, stores, metrics, opts));
  }
  if (stores.durable && stores.durable->assigns_seq()) {
    // Several nodes write the same channels (each shard hears its own from the
    // cluster's broker) and share their presence, whose entries name this
    // process: a random id per start.
    std::random_device rd;
    char id[17];
    std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
    for (unsigned i = 0; i < shards_.size(); ++i) {
      Shard* s = shards_[i].get();
      s->set_node_id(id);
      loops_.run_on(i, [s] { s->start_presence(); });
    }
  }
}

unsigned Hub::shard_of(std::string_view tenant, std::string_view ch) const {
  // Stable across runs and builds, unlike std::hash.
  const uint64_t h = fnv1a_64(ch, fnv1a_64("\x1f", fnv1a_64(tenant, kParleyPlacementSeed)));
  return static_cast<unsigned>(h % shards_.size());
}

Membership Hub::join(JoinRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(req.sub->loop()));
  auto link = std::make_shared<MemberLink>();
  link->tenant = req.tenant;
  link->id = store::ChannelId{req.tenant->id, req.ch};
  link->fanout_key = link->id.key();
  link->conn = req.sub->conn_id();
  link->loop = req.sub->loop();
  link->tick_ms = req.tenant->ns(protocol::channel_namespace(req.ch)).tick_ms;
  req.link = link;
  submit_join(std::move(req));
  return Membership(this, std::move(link));
}

void Hub::rejoin(Membership& m, JoinRequest req) {
  PARLEY_CHECK(m.active() && m.hub_ == this);
  req.link = m.link_;
  submit_join(std::move(req));
}

void Membership::leave() {
  if (!link_ || link_->left) return;
  hub_->depart(*link_);
}

void Hub::depart(MemberLink& link) {
  link.left = true;
  // Off every loop only at teardown (a session destroyed after its loop stopped):
  // there is nothing left to tell.
  if (runtime::LoopGroup::current() < 0) return;
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(link.loop));
  if (link.registered) {
    fanouts_[link.loop]->remove_member(link.fanout_key, link.conn);
    link.registered = false;
  }
  // Posted from this loop after the join (the same queue: Shard::post), so the
  // shard runs it after the join.
  const unsigned i = shard_of(link.id.tenant, link.id.channel);
  Shard* s = shards_[i].get();
  s->post([s, tenant = link.tenant, ch = link.id.channel, conn = link.conn] {
    s->leave(tenant, ch, conn);
  });
}

template <typename Req>
void Hub::to_owner(Req req, void (Shard::*method)(Req)) {
  // The index is computed before `req` is moved into the task: in one
  // expression the evaluation order is unspecified, and a moved-from channel
  // name would route the task to another shard's loop.
  const unsigned i = shard_of(req.tenant->id, req.ch);
  Shard* s = shards_[i].get();
  s->post([s, method, req = std::move(req)]() mutable { (s->*method)(std::move(req)); });
}

void Hub::set_upstream(UpstreamSink* sink) {
  upstream_ = sink;
  for (auto& s : shards_) s->set_upstream(sink);
}

void Hub::forward_upstream(UpstreamEvent ev) { to_owner(std::move(ev), &Shard::forward_upstream); }

void Hub::submit_join(JoinRequest req) {
  if (!requests_.try_enter()) {
    return loops_.run_on(req.sub->loop(), [done = std::move(req.done)] {
      JoinResult refused;
      refused.status = draining();
      done(std::move(refused));
    });
  }
  req.done = [this, done = std::move(req.done)](JoinResult r) {
    done(std::move(r));
    requests_.leave();
  };
  to_owner(std::move(req), &Shard::join);
}

void Hub::history(HistoryRequest req) { to_owner(std::move(req), &Shard::history); }

template <typename Req>
void Hub::gated(Req req, void (Shard::*method)(Req)) {
  if (!requests_.try_enter()) {
    return loops_.run_on(req.reply_loop,
                         [done = std::move(req.done)] { done(store::AppendOutcome{draining()}); });
  }
  req.done = [this, done = std::move(req.done)](store::AppendOutcome out) {
    done(std::move(out));
    requests_.leave();
  };
  to_owner(std::move(req), method);
}

void Hub::publish(PublishRequest req) { gated(std::move(req), &Shard::publish); }

// Counted with the publishes: a drain waits for its answer too.
void Hub::moderate(ModerateRequest req) { gated(std::move(req), &Shard::moderate); }

void Hub::state(StateRequest req) { to_owner(std::move(req), &Shard::state); }

void Hub::members(const TenantConfig* tenant, std::string ch, unsigned reply_loop,
                  MembersDone done) {
  const unsigned i = shard_of(tenant->id, ch);
  Shard* s = shards_[i].get();
  s->post([s, tenant, ch = std::move(ch), reply_loop, done = std::move(done)]() mutable {
    s->members(tenant, ch, reply_loop, std::move(done));
  });
}

void Hub::sweep() {
  const int64_t now = wall_ms();
  for (unsigned i = 0; i < shards_.size(); ++i) {
    Shard* s = shards_[i].get();
    loops_.run_on(i, [s, now] { s->sweep_idle(now); });
  }
}

size_t Hub::inflight() const {
  size_t n = 0;
  for (const auto& s : shards_) n += s->inflight();
  return n;
}

size_t Hub::channel_count() const {
  size_t n = 0;
  for (const auto& s : shards_) n += s->channel_count();
  return n;
}

}  // namespace parley::hub
