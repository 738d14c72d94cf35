// A hub shard: owns the channels whose (tenant, name) hash to it and alone
// mutates them: membership, presence, sequencing, dedupe, appends, fan-out.
//
// Runs on loop `index`; every public method except the atomics must be called
// there (Hub posts to it). Results travel back to the loop that asked through
// the shard's runtime::Outbox, which keeps its messages to one loop in order:
// a join's reply (which registers the member in that loop's TickBatcher)
// always precedes the channel's newer events.
//
// The store is asynchronous: every completion is posted back to this loop before
// it touches a channel. A channel being recovered queues what arrives for it; a
// join with `since` reads its backfill in bounded pages (newest first, within the
// connection's backfill allowance), then catches up to the committed seq and only
// then becomes a live member, in the same task that posts its reply.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster.h"
#include "metrics/metrics.h"
#include "hub/channel.h"
#include "hub/channel_stats.h"
#include "hub/history.h"
#include "hub/tick_batcher.h"
#include "hub/requests.h"
#include "hub/upstream_sink.h"
#include "runtime/inbox.h"
#include "runtime/loop_group.h"
#include "runtime/outbox.h"

namespace parley::hub {

struct Stores {
  store::Store* durable = nullptr;    // namespaces with durable = true
  store::Store* ephemeral = nullptr;  // durable = false: kept in memory only
  // The other nodes of a durable store that numbers the log (Store::assigns_seq);
  // null: this node alone (cluster::in_process()).
  cluster::Cluster* cluster = nullptr;
};

struct ShardOptions {
  uint32_t append_queue_limit = 20000;  // in-flight appends before `backpressure`
  int backpressure_retry_ms = 100;
  int64_t idle_unload_ms = 60'000;      // a channel with no member and nothing in flight
  // A store that numbers the log: how a channel follows it (valkey.fanout_*).
  seqlog::Options follow;
  // Presence of several nodes: this node's entries expire this long after their
  // last refresh, which comes every third of it (valkey.presence_ttl_ms).
  int64_t presence_ttl_ms = 15'000;
};

class Shard final : private cluster::FeedListener {
 public:
  Shard(unsigned index, runtime::LoopGroup& loops, std::vector<TickBatcher*> fanouts, Stores stores,
        metrics::Metrics& metrics, ShardOptions opts);

  // Any thread: runs `fn` on this shard's loop, after what was posted here before
  // it (FIFO per posting thread), at the latest when its posted drain comes up and
  // earlier when one of the loop's fan-out drain slices starts first (Hub routes
  // every session request through it: a pub does not wait behind queued fan-out).
  void post(std::function<void()> fn) { inbound_.push(std::move(fn)); }

  void join(JoinRequest req);
  void leave(const TenantConfig* tenant, const std::string& ch, uint64_t conn);
  void publish(PublishRequest req);
  void history(HistoryRequest req);
  void state(StateRequest req);
  // An edit or delete of a message (shard_moderation.cc).
  void moderate(ModerateRequest req);
  void members(const TenantConfig* tenant, const std::string& ch, unsigned reply_loop,
               MembersDone done);
  // Written messages of namespaces that forward `msg` go to `sink` (set at
  // start-up, before any request; null: none).
  void set_upstream(UpstreamSink* sink) { upstream_ = sink; }
  // A session's join/leave/state/up event: forwarded after the channel's
  // appends in flight, so the app server sees it in the order it happened.
  void forward_upstream(UpstreamEvent ev);
  // Drops channels nobody uses any more (their state is in the store) and
  // expires dedupe entries. Walks the channels a slice at a time, each slice a
  // task of its own, so that a shard holding hundreds of thousands of channels
  // never holds its loop for the whole walk. A sweep asked for while one is
  // still walking is skipped.
  void sweep_idle(int64_t now_ms);

  // This node's id in presence entries and notes (set before any request).
  void set_node_id(std::string id) { node_id_ = std::move(id); }
  // Refreshes this node's presence entries and re-reads the other nodes' (their
  // dead nodes' entries expire) every presence_ttl_ms / 3; call once, on its loop.
  void start_presence();

  // On this shard's loop: its `n` busiest channels since the previous call
  // (hub/channel_stats.h).
  std::vector<ChannelStat> busiest(size_t n);
  size_t inflight() const { return inflight_total_.load(std::memory_order_relaxed); }
  size_t channel_count() const { return channel_count_.load(std::memory_order_relaxed); }

  // Appends (and channel loads) queued for one channel before `backpressure`.
  static constexpr size_t kMaxWaiting = 1024;

 private:
  struct Backfill;
  using ChannelFn = std::function<void(Channel*, const Error*)>;

  Channel* find(const TenantConfig* tenant, std::string_view ch);
  // Runs fn(channel, nullptr) once the channel is loaded (now, when it is), after
  // a store recovery when needed; fn(nullptr, error) when it cannot be.
  void with_channel(const TenantConfig* tenant, std::string_view ch, ChannelFn fn);
  void on_recovered(const std::string& key, Result<store::ChannelRecovery> rec,
                    std::vector<cluster::PresenceEntry> presence = {});
  // Presence across nodes: a user's first / last connection here, and the
  // others' entries read from the store.
  void share_presence(Channel& c, const std::string& user, bool joined);
  void presence_event(Channel& c, const std::string& user, bool joined);
  void reconcile_presence(Channel& c, const std::vector<cluster::PresenceEntry>& entries);
  void refresh_presence();
  void join_loaded(Channel* c, JoinRequest req);
  void backfill_step(Channel* c, std::shared_ptr<Backfill> b);
  void on_backfill_page(Channel* c, std::shared_ptr<Backfill> b,
                        Result<std::vector<store::StoredMessage>> page);
  // The join's reply: joined (+ backfill); the member goes live with it.
  void finish_join(Channel* c, JoinRequest req, JoinResult result, bool go_live);
  void history_loaded(Channel* c, HistoryRequest req);
  // A publish to a loaded channel, in the log's numbering: the server's (seq =
  // last + 1, dedupe here) or the store's (seq 0; shard_cross_node.cc).
  void publish_loaded(Channel* c, PublishRequest req);
  void publish_numbered(Channel* c, PublishRequest req);
  void publish_unnumbered(Channel* c, PublishRequest req);
  void reply(PublishRequest& req, store::AppendOutcome out);
  // An entry's append in the log's numbering, shared by publishes and
  // moderation: `msg` carries its seq (numbered) or 0; `amended` rides along.
  void append_numbered(Channel* c, store::DedupeKey dedupe_key, store::StoredMessage msg,
                       Channel::Pending pending, std::optional<store::StoredMessage> amended);
  void append_unnumbered(Channel* c, store::StoredMessage msg, Channel::Pending pending,
                         std::optional<store::StoredMessage> amended);
  // Moderation (shard_moderation.cc): one op of a channel at a time; its
  // target read, checked, then appended as an event.
  void moderate_loaded(Channel* c, ModerateRequest req);
  void moderation_step(Channel* c, ModerateRequest req);
  void on_moderation_target(Channel* c, ModerateRequest req,
                            Result<std::vector<store::StoredMessage>> read);
  void answer_moderation(ModerateRequest& req, store::AppendOutcome out);
  void moderation_next(Channel* c);
  // The upstream `msg` event of a publish (null: the namespace does not forward it).
  std::unique_ptr<UpstreamEvent> upstream_msg(const Channel& c, const PublishRequest& req,
                                               int64_t now_ms, uint64_t seq) const;
  // An append's answer, in submission order: committed (deliver), a seq the
  // store assigned (on_assigned: ack, then follow), or only answers.
  void on_committed(Channel* c, store::AppendOutcome outcome);
  // The store's append completions, in order, drained in batches on this loop.
  struct Committed {
    Channel* channel;
    store::AppendOutcome outcome;
  };
  void on_committed_batch(std::vector<Committed>& batch);
  // A store that numbers the log (shard_cross_node.cc): gives a channel its
  // follower; this node's append got `seq`: acked, delivered in seq order.
  void follow(Channel& c);
  void on_assigned(Channel* c, Channel::Log::Completion done);
  // Drops a channel from channels_ (and its broker watch).
  void forget(std::unordered_map<std::string, std::unique_ptr<Channel>>::iterator it);
  void broadcast(Channel& c, ChannelEvent ev);
  void remove_member(Channel& c, uint64_t conn);
  // Queues `fn` to run on `loop`, after everything queued there before it.
  void to_loop(unsigned loop, std::function<void()> fn) { out_.to(loop, std::move(fn)); }

  unsigned index_;
  runtime::LoopGroup& loops_;
  std::vector<TickBatcher*> fanouts_;
  Stores stores_;
  metrics::Metrics& metrics_;
  ShardOptions opts_;
  std::unordered_map<std::string, std::unique_ptr<Channel>> channels_;
  runtime::Outbox out_;
  // publish_loaded: the append whose inline completion it handles itself
  // (0: none); only ever non-zero while a store's append() runs.
  uint64_t inline_gen_ = 0;
  uint64_t append_gen_ = 0;
  UpstreamSink* upstream_ = nullptr;
  runtime::Inbox<Committed> committed_;
  runtime::Inbox<std::function<void()>> inbound_;  // post(): the hub's requests
  std::atomic<size_t> inflight_total_{0};
  std::atomic<size_t> channel_count_{0};
  bool sweeping_ = false;
  std::string node_id_;
  std::unique_ptr<boost::asio::steady_timer> presence_timer_;

  // One slice of sweep_idle, from bucket `from` of channels_ on.
  void sweep_slice(int64_t now_ms, size_t from);

  // A store that assigns seqs (several nodes; shard_cross_node.cc): the shard
  // watches its channels' feed in the broker and hears it here, on a broker
  // thread (posted to this loop): a committed message (another node's, or this
  // node's own), a request to read what a lost subscription may have missed,
  // and a presence note from another node.
  void on_message(const store::ChannelId& id, store::StoredMessage msg) override;
  void on_resync(const store::ChannelId& id) override;
  void on_note(const store::ChannelId& id, std::string note) override;
  // The same, on this loop.
  void pushed(const store::ChannelId& id, store::StoredMessage msg);
  void resync(const store::ChannelId& id);
  void noted(const store::ChannelId& id, const std::string& note);

  cluster::Cluster& cluster_;
};

}  // namespace parley::hub
