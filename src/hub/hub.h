// The hub: routes each channel operation to the shard that owns the channel
// (a stable hash of tenant and name) by posting to that shard's loop.
// Any thread, except where a method says otherwise. Owns the shards and the
// per-loop tick batchers: a session joins through it and holds a Membership; it
// never touches a shard's or a loop's tables itself.
#pragma once

#include <memory>
#include <vector>

#include "hub/channel_stats.h"
#include "hub/membership.h"
#include "hub/tick_batcher.h"
#include "hub/requests.h"
#include "hub/shard.h"
#include "runtime/gate.h"
#include "hub/upstream_sink.h"

namespace parley::hub {

class Hub {
 public:
  Hub(runtime::LoopGroup& loops, Stores stores, metrics::Metrics& metrics, ShardOptions opts);

  unsigned shard_of(std::string_view tenant, std::string_view ch) const;

  // On the subscriber's loop. Joins req.sub to req.ch; req.done runs there with
  // the reply (see JoinRequest). The handle leaves when dropped.
  Membership join(JoinRequest req);
  // On the member's loop: joins a channel `m` is in again (a `join` repeated,
  // maybe with `since`): answers like join(), keeps the membership.
  void rejoin(Membership& m, JoinRequest req);
  void publish(PublishRequest req);
  // An edit or delete of a message by seq (Shard::moderate); req.done runs on
  // req.reply_loop.
  void moderate(ModerateRequest req);
  // History of a channel, through its shard (committed-seq cut, byte budget).
  void history(HistoryRequest req);
  void state(StateRequest req);
  void members(const TenantConfig* tenant, std::string ch, unsigned reply_loop,
               MembersDone done);
  // Where written messages of namespaces that forward `msg` go; also what
  // sessions forward their join/leave/state/up to. Set before start.
  void set_upstream(UpstreamSink* sink);
  UpstreamSink* upstream() const { return upstream_; }
  // A session's upstream event, through the channel's shard (Shard::forward_upstream).
  void forward_upstream(UpstreamEvent ev);
  // Runs the idle sweep on every shard (call periodically, any thread).
  void sweep();

  // Drain: from now on joins and publishes are answered `unavailable`, and
  // `on_idle` runs once every one already accepted has been answered (its
  // `done` has run on its reply loop, so acks are queued to their clients).
  // Once; any thread but a loop's own blocking wait.
  void close(std::function<void()> on_idle) { requests_.close(std::move(on_idle)); }

  size_t inflight() const;
  size_t channel_count() const;
  // The node's `n` busiest channels since the previous call, gathered from every
  // shard (hub/channel_stats.h); `done` runs on the last shard's loop to answer.
  void busiest_channels(size_t n, ChannelStatsDone done);

 private:
  friend class Membership;
  // Membership::leave: stops delivery on this loop at once, then tells the shard.
  void depart(MemberLink& link);
  void submit_join(JoinRequest req);
  // Runs (shard->*method)(req) on the loop of the shard that owns req's channel.
  template <typename Req>
  void to_owner(Req req, void (Shard::*method)(Req));
  // to_owner, for a request the drain waits for (answered `unavailable` once
  // closed; its done() leaves requests_).
  template <typename Req>
  void gated(Req req, void (Shard::*method)(Req));

  runtime::LoopGroup& loops_;
  std::vector<std::unique_ptr<TickBatcher>> fanouts_;
  std::vector<std::unique_ptr<Shard>> shards_;
  runtime::Gate requests_;  // joins and publishes not yet answered
  UpstreamSink* upstream_ = nullptr;
};

}  // namespace parley::hub
