#include "hub/hub.h"

#include "common/clock.h"

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
}

unsigned Hub::shard_of(std::string_view tenant, std::string_view ch) const {
  // FNV-1a: stable across runs and builds, unlike std::hash.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(tenant);
  mix("\x1f");
  mix(ch);
  return static_cast<unsigned>(h % shards_.size());
}

void Hub::join(JoinRequest req) {
  // The index is computed before `req` is moved into the task: argument
  // evaluation order is unspecified, and a moved-from channel name would
  // route the task to another shard's loop.
  if (!requests_.try_enter()) {
    return loops_.run_on(req.sub->loop(), [done = std::move(req.done)] { done(JoinResult{draining()}); });
  }
  req.done = [this, done = std::move(req.done)](JoinResult r) {
    done(std::move(r));
    requests_.leave();
  };
  const unsigned i = shard_of(req.tenant->id, req.ch);
  Shard* s = shards_[i].get();
  loops_.run_on(i, [s, req = std::move(req)]() mutable { s->join(std::move(req)); });
}

void Hub::leave(const TenantConfig* tenant, std::string ch, uint64_t conn) {
  const unsigned i = shard_of(tenant->id, ch);
  Shard* s = shards_[i].get();
  loops_.run_on(i, [s, tenant, ch = std::move(ch), conn] { s->leave(tenant, ch, conn); });
}

void Hub::publish(PublishRequest req) {
  if (!requests_.try_enter()) {
    return loops_.run_on(req.reply_loop,
                         [done = std::move(req.done)] { done(PublishOutcome{draining()}); });
  }
  req.done = [this, done = std::move(req.done)](PublishOutcome out) {
    done(std::move(out));
    requests_.leave();
  };
  const unsigned i = shard_of(req.tenant->id, req.ch);
  Shard* s = shards_[i].get();
  loops_.run_on(i, [s, req = std::move(req)]() mutable { s->publish(std::move(req)); });
}

void Hub::state(StateRequest req) {
  const unsigned i = shard_of(req.tenant->id, req.ch);
  Shard* s = shards_[i].get();
  loops_.run_on(i, [s, req = std::move(req)]() mutable { s->state(std::move(req)); });
}

void Hub::members(const TenantConfig* tenant, std::string ch, unsigned reply_loop,
                  MembersDone done) {
  const unsigned i = shard_of(tenant->id, ch);
  Shard* s = shards_[i].get();
  loops_.run_on(i, [s, tenant, ch = std::move(ch), reply_loop, done = std::move(done)]() mutable {
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
