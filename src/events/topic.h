// One topic of one tenant: its partitions, the connections tailing it and its
// consumer groups (PROTOCOL.md "Event streams and leaderboards").
//
// Owned by one loop (the engine picks it from a hash of tenant + topic), which
// alone touches it: a topic's emits, deliveries, rebalances and commits are
// ordered by that loop, with no lock. A hot topic therefore uses one core for
// sequencing (the store's writer, decoding and the sockets run elsewhere), like a
// hot channel on its hub shard. Every frame it sends a connection is posted from
// this loop, so a reply always precedes the events it announces and `revoked`
// precedes `assigned`.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster.h"
#include "events/key_hash.h"
#include "events/leaderboard.h"
#include "events/partition.h"
#include "events/topic_stats.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "runtime/outbox.h"
#include "events/event_service.h"
#include "store/store.h"
#include "tenant/tenant_config.h"

namespace parley::events {

// What a topic on a store shared by several nodes (Store::assigns_seq) has of
// the others (the engine's).
struct TopicNodes {
  std::string node;  // this process's id: the name it holds consumer groups under
  cluster::Cluster* cluster = nullptr;  // null: cluster::in_process()
  // Hears the partitions' feed from the broker (the engine; outlives the topic).
  cluster::FeedListener* listener = nullptr;
};

class Topic {
 public:
  Topic(unsigned loop, runtime::LoopGroup& loops, store::Store& store, const TenantConfig& tenant,
        std::string name, const TopicConfig& cfg, std::shared_ptr<TopicStats> stats,
        metrics::Metrics& metrics, TopicNodes nodes = {}, const seqlog::Options& follow = {});
  Topic(const Topic&) = delete;
  Topic& operator=(const Topic&) = delete;

  void emit(EmitRequest req);
  void tail(TailRequest req);
  void consume(ConsumeRequest req);
  void commit(CommitRequest req);
  void leave(const std::string& group, uint64_t conn, unsigned reply_loop,
             std::function<void()> done);
  void disconnect(uint64_t conn);

  // The leaderboards fed by this topic (created with it, from the tenant's
  // config), and their rebuild from what the partitions hold (once, at creation).
  Leaderboard* board(std::string_view name);
  void rebuild_boards();
  // Runs `fn` once every partition has been recovered (or at once if it is).
  void when_ready(std::function<void()> fn);
  bool ready() const;
  Partition& partition(uint32_t p) { return *parts_[p]; }
  uint32_t partitions() const { return static_cast<uint32_t>(parts_.size()); }
  const std::string& name() const { return name_; }


 private:
  struct Member {
    uint64_t conn = 0;
    std::weak_ptr<EventSink> sink;
    std::vector<uint32_t> parts;
    std::vector<uint64_t> cursors;  // one per part
  };
  struct Group {
    std::string name;
    store::ChannelId log;  // the commit log: (tenant, "<topic>\x1fg\x1f<group>")
    bool loaded = false, loading = false;
    std::vector<std::function<void()>> waiting;
    uint64_t gen = 0;
    std::vector<Member> members;  // in join order
    std::vector<std::optional<uint64_t>> committed;  // per partition
    uint64_t log_seq = 0;  // last record of the commit log
    // One commit-log write in flight per group: the commits that arrive
    // meanwhile are answered by the next write, whose record holds every
    // partition's offset (write_commit).
    bool writing = false;
    std::vector<CommitRequest> queued;
    // Shared store: this node holds the group (cluster::Leases::claim on the commit log's
    // key) while it has members here; a node that does not is refused.
    bool held = false, claiming = false;
    std::vector<std::function<void(Status)>> claim_waiting;
  };
  struct TailState {
    std::vector<uint64_t> cursors;  // per partition; 0: not tailed
  };

  void run_emit(EmitRequest req);
  void run_tail(TailRequest req);
  void recovered_one();
  // Once every partition is recovered and the key hash is known (or failed to
  // load), runs what waits for readiness.
  void settle();
  void run_waiting();
  void schedule_pump();
  void pump();
  void close_tails(uint64_t conn);

  Group* find_group(const std::string& name);
  void load_group(Group& g, std::function<void()> then);
  uint64_t next_of(const Group& g, uint32_t p) const;
  // Closes every member's cursors, bumps gen, assigns each partition to one
  // member (p mod members) and opens their cursors at the group's commit + 1.
  // Every member but `quiet` (the joiner, whose assignment is its reply, or the
  // one leaving, already removed) is sent `revoked` (if it held a generation)
  // and then `assigned`.
  void rebalance(Group& g, uint64_t quiet);
  void remove_member(Group& g, uint64_t conn);
  void write_commit(Group& g, CommitRequest req);
  void write_commits(Group& g, std::vector<CommitRequest> reqs);
  // Shared store: takes the group for this node (then(ok)), or says which error
  // to answer (another node holds it: unavailable). Held groups are renewed
  // every kGroupHoldMs / 3 and released when their last member here leaves.
  void hold_group(Group& g, std::function<void(Status)> then);
  void arm_group_renewal();
  void renew_groups();
  void send_to(const std::weak_ptr<EventSink>& sink, std::string frame);

  unsigned loop_;
  runtime::LoopGroup& loops_;
  // Everything this topic sends the loops of its connections (replies,
  // `events`, `revoked`/`assigned`), in the order made (runtime/outbox.h).
  runtime::Outbox out_;
  store::Store& store_;
  const TenantConfig& tenant_;
  std::string name_;
  const TopicConfig& cfg_;
  // Before parts_: the partitions' store callbacks point at it.
  std::unique_ptr<Partition::AppendInbox> appended_;
  std::vector<std::unique_ptr<Partition>> parts_;
  unsigned recovering_ = 0;
  std::vector<std::function<void()>> waiting_;
  bool pump_scheduled_ = false;
  std::unique_ptr<boost::asio::steady_timer> tick_;
  std::unordered_map<uint64_t, TailState> tails_;
  std::map<std::string, std::unique_ptr<Group>, std::less<>> groups_;
  std::vector<std::unique_ptr<Leaderboard>> boards_;
  std::unique_ptr<boost::asio::steady_timer> rebuild_retry_;
  void replay_partition(uint32_t p, uint64_t after, uint64_t cut, std::shared_ptr<size_t> left);

  // Board snapshots (topic_snapshot.cc): every snapshot_s, when events were
  // committed since the last one, the boards' rounds and each partition's
  // committed offset go to the store as one record of the channel
  // (tenant, "<topic>\x1fs") (two kept). A rebuild loads the newest and replays
  // only the events after its offsets.
  void load_snapshot(std::function<void(std::vector<uint64_t> from)> then);
  bool apply_snapshot(std::string_view body, std::vector<uint64_t>& from);
  void arm_snapshot();
  void take_snapshot();
  store::ChannelId snap_id_;
  bool snap_known_ = false;    // snap_seq_ was recovered from the store
  bool snap_writing_ = false;
  uint64_t snap_seq_ = 0;      // the snapshot channel's last record
  uint64_t snap_committed_ = 0;  // stats_->committed at the last snapshot
  std::unique_ptr<boost::asio::steady_timer> snap_timer_;

  // The key hash (key_hash.h, topic_key_hash.cc): read from the record once the
  // partitions are recovered (they say whether an unrecorded topic is an old
  // one), written by the topic's first start; the topic is not ready without it.
  void load_key_hash(bool written = false);
  void decide_key_hash(uint64_t record_seq);
  void write_key_hash(KeyHash h, uint64_t seq);
  void key_hash_loaded(std::optional<KeyHash> h);
  store::ChannelId hash_id_;
  std::optional<KeyHash> key_hash_;
  bool hash_loading_ = false;
  std::shared_ptr<TopicStats> stats_;
  metrics::Metrics& metrics_;
  size_t inflight_ = 0;
  std::string node_;
  cluster::Leases& leases_;
  std::unique_ptr<boost::asio::steady_timer> renew_timer_;
  bool renew_armed_ = false;
};

// How long a node's hold on a consumer group outlives the node (a crash): the
// group is free for another node this long after its holder stopped renewing.
inline constexpr int64_t kGroupHoldMs = 15'000;

// The most appends one topic keeps in flight before answering `backpressure`.
inline constexpr size_t kTopicInflightLimit = 200'000;
// The most consumer groups a topic keeps (each holds its offsets in memory).
inline constexpr size_t kMaxGroupsPerTopic = 1024;

}  // namespace parley::events
