// The valkey store: channels in a Valkey (or Redis >= 7) deployment shared by
// every Parley node (docs/architecture.md, "The valkey store").
//
// Each call is one round trip on a pipelined connection of the node that holds
// the channel's partition: append and recover are EVALSHAs of the scripts in
// scripts.h, reads are XRANGE / XREVRANGE of the channel's history stream. All
// commands of one channel use one connection, so they run and complete in the
// order they were submitted.
//
// Threads: calls come from any thread and are posted to the loop of the chosen
// connection; completions run on that loop (the hub posts them back to its own).
// No loop ever waits for a reply. flush() and shutdown() block: never on a loop.
//
// Cluster (cluster = true): a command goes to the master of its tag's slot, as
// the store's Topology (topology.h, one thread) last found it; open() asks once
// and does not fail when no node answers (calls fail `unavailable` until one
// does). A failed or silent connection, CLUSTERDOWN, MOVED and a lost feed
// subscription ask the Topology for a fresh map, which moves the partitions
// (routing and feed subscriptions) to the masters the cluster now names: a
// failover is followed without a MOVED from the dead master. MOVED also points
// the slot at the new master at once; ASK resends the call to the
// importing node behind ASKING; TRYAGAIN (a multi-key call meeting a slot whose
// keys are half migrated) waits a backoff (5 ms doubling to 100 ms). After MOVED
// or TRYAGAIN a call is sent again, routed afresh, until command_timeout_ms from
// its first send, if sending it twice cannot reorder a channel: reads, recover,
// and appends that carry the hub's seq (the script refuses a seq out of turn).
// An append whose seq the script assigns (the hub's, on this store) fails
// `unavailable` instead (retryable: the client sends it again with its id), since
// a resend could sequence it after a later pub of the same connection. While a
// channel has appends in flight they all start on one connection, even if its
// slot moves meanwhile, and their completions are handed out in submission order
// whichever node answered (a redirected call can be answered after a later one).
//
// History older than a channel's stream keeps (the namespace's `history` latest)
// comes from PostgreSQL when postgres_url is set, else from DynamoDB when
// dynamodb is: the persister (src/persist) archives every WAL entry there. A read whose Valkey answer does not reach down
// to what was asked is completed from it on the archive's reader threads, so the
// callback then runs on one of those.
//
// Files: valkey_store.cc (open, routing, calls and their redirections, reads,
// the loss check), valkey_append.cc (appends, and the commit's publication),
// valkey_health.cc. What the nodes share beside the log is src/cluster/'s
// (valkey_cluster.h): its broker holds the partition feeds' subscriptions,
// pushes and notes (valkey_broker.h), told where each feed lives by
// feed_route() and sharing FollowedChannels with the append path; presence and
// leases go over command().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/loop_group.h"
#include "store/archive_reader.h"
#include "store/dynamodb/dynamo_client.h"
#include "store/store.h"
#include "store/valkey/cluster_map.h"
#include "store/valkey/feed_route.h"
#include "store/valkey/followed_channels.h"
#include "store/valkey/node_pool.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/topology.h"

namespace parley::store::postgres {
class PgHistory;
}

namespace parley::store::valkey {

struct ValkeyOptions {
  std::vector<std::string> nodes;   // host:port; without cluster, partition k -> nodes[k % N]
  bool cluster = false;             // nodes are seeds; slots come from CLUSTER SLOTS
  uint32_t partitions = 64;
  uint32_t pool_size = 2;           // connections per node
  uint32_t command_timeout_ms = 2000;
  // Cluster: how often the map is read again while every node answers (while one
  // does not: every 250 ms), and how long one node may take to answer it.
  uint32_t topology_refresh_ms = 2000;
  // Acks wait for this many replicas (WAIT after the append script), at most
  // wait_timeout_ms; fewer in time fails the append `unavailable`.
  uint32_t wait_replicas = 0;
  uint32_t wait_timeout_ms = 1000;
  uint64_t wal_max_len = 100'000;   // per partition stream, trimmed approximately
  // The persister's database: history older than a channel's stream keeps is read
  // there (postgres/pg_history.h). Empty: Valkey's history is all there is.
  std::string postgres_url;
  unsigned postgres_readers = 2;     // threads (and connections) reading it
  uint32_t postgres_timeout_ms = 5000;
  // Without postgres_url: the persister's DynamoDB table holds that history
  // (dynamodb/dynamo_history.h). Both unset: Valkey's history is all there is.
  std::optional<dynamodb::DynamoOptions> dynamodb;
  unsigned dynamodb_readers = 2;
};

// Cluster answers the store followed (counted as they come, resends or not).
struct RedirectStats {
  uint64_t moved = 0;
  uint64_t ask = 0;
  uint64_t tryagain = 0;
  uint64_t rediscoveries = 0;  // cluster maps read (Topology runs)
  uint64_t map_changes = 0;    // of them, the ones that moved some slot
  uint64_t wait_short = 0;     // appends not acknowledged: WAIT saw too few replicas
};

struct NodeStats {
  std::string node;  // ip:port
  size_t queued = 0;
  size_t in_flight = 0;
  bool down = false;
};

class ValkeyStore final : public Store {
 public:
  // Checks the options; a cluster is discovered here (blocking, before the loops
  // run). Connections open on first use.
  static Result<std::unique_ptr<ValkeyStore>> open(runtime::LoopGroup& loops, ValkeyOptions opts);
  ~ValkeyStore() override;

  void recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) override;
  void append(AppendRequest req, AppendDone done) override;
  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) override;
  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit, ReadDone done) override;
  void flush() override;
  size_t pending() const override { return appends_.load(std::memory_order_relaxed); }
  StoreHealth health() const override;
  // The script assigns seqs and dedupes for every node (seq 0 in an append).
  bool assigns_seq() const override { return true; }

  // --- For the cluster's valkey implementation (cluster/valkey_cluster.h) ---
  // Not the Store's: what the broker over the partition feeds
  // (cluster/valkey_broker.h) needs of the store's map, and what the two share
  // (feed_route.h, followed_channels.h).
  //
  // Where the partition feed `feed` ({t.pk}:f, ChannelKeys::feed) lives now;
  // nullopt while a cluster's map does not name its master yet.
  std::optional<FeedRoute> feed_route(const std::string& feed);
  // The channels the broker watches here, and what this node knows of each.
  FollowedChannels& followed() { return followed_; }
  // Told of every fresh map and of shutdown(); null: nobody. Set before the
  // first watch; waits for a call to the previous watcher to return.
  void set_route_watcher(RouteWatcher* w);
  // The map may be stale (a feed the node took away, a subscriber connection
  // that failed): a fresh one soon. Nothing without a cluster.
  void request_map();
  // The loss check for channels followed here on a partition that moved to
  // another master, with what this node saw of each (routes_changed).
  void check_losses(std::vector<std::pair<ChannelId, uint64_t>> channels);
  bool clustered() const { return opts_.cluster; }
  bool closed() const { return closed_.load(); }
  runtime::LoopGroup& loops() { return loops_; }
  // One command about `id` on the connection of its partition (channel_keys of
  // partitions()), sent again after MOVED / TRYAGAIN like a read; counted in
  // flush() and shutdown(); `done` on a loop (kUnavailable at once after
  // shutdown()).
  void command(const ChannelId& id, std::string cmd, ReplyDone done);

  // Waits (at most command_timeout_ms) for what is in flight, then closes every
  // connection; later calls fail with kUnavailable at once. Before the loops stop.
  void shutdown();

  std::vector<NodeStats> node_stats() const;
  // Every partition of every tenant with a channel loaded here: "<tenant>.p<k>"
  // and whether its master answers.
  std::vector<std::pair<std::string, bool>> partition_stats() const;
  RedirectStats redirects() const {
    return {moved_.load(std::memory_order_relaxed), asked_.load(std::memory_order_relaxed),
            tryagain_.load(std::memory_order_relaxed), topology_ ? topology_->runs() : 0,
            map_changes_.load(std::memory_order_relaxed), wait_short_.load(std::memory_order_relaxed)};
  }
  // Called on a loop thread with the round-trip time of every append script call.
  // Set before the first call.
  void set_script_latency_observer(std::function<void(int64_t ns)> fn) { observe_ = std::move(fn); }
  uint32_t partitions() const { return opts_.partitions; }

 private:
  ValkeyStore(runtime::LoopGroup& loops, ValkeyOptions opts);
  // The pool serving `tag` (route_mu_ held); null while a cluster's map is not
  // known yet.
  NodePool* route_locked(const std::string& tag);
  NodePool* route(const std::string& tag);
  // The pool for a node address, made on first sight (route_mu_ held).
  size_t pool_index_locked(const HostPort& hp);
  // Sends `cmd` on the connection of (pool, channel); `done` on a loop. `resend`:
  // the call may be sent again after MOVED / TRYAGAIN (see the header).
  // `redirected`, when set, runs just before `done` on the loop of the connection
  // that answered when the command was sent more than once (MOVED, ASK, TRYAGAIN):
  // what must follow the command where and after it ran (WAIT) goes there.
  using Redirected = std::function<void(RespConnection& answered)>;
  void call(NodePool* pool, const ChannelKey& key, const std::string& tag, std::string cmd,
            bool resend, ReplyDone done, Redirected redirected = nullptr);
  void on_moved(uint16_t slot, const HostPort& to);
  // A fresh map from the Topology (its thread): routing, then the route
  // watcher (which subscribes every watched feed where its slot lives now).
  void apply_view(const ClusterView& view);
  // Whether some node the map routes to does not answer (route_mu_ not held).
  bool degraded() const;
  // A pool that answers: connected, replied since its last failure.
  static bool answers(const NodePool* p) { return p && p->up() && !p->down(); }
  void begin_op();
  void end_op();
  // After a history read from Valkey: the part of [lo, hi) its stream no longer
  // holds, from PostgreSQL (see read_after / read_before).
  void fill_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                  std::vector<StoredMessage> recent, ReadDone done);
  void fill_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                   std::vector<StoredMessage> recent, ReadDone done);
  runtime::LoopGroup& loops_;
  ValkeyOptions opts_;
  ConnectionOptions conn_opts_;
  mutable std::mutex route_mu_;  // guards nodes_ (which only grows), slots_, sticky_
  std::vector<std::unique_ptr<NodePool>> nodes_;
  static constexpr uint16_t kUnmapped = 0xffff;
  std::vector<uint16_t> slots_;  // cluster: slot -> index in nodes_ (kUnmapped: not known)
  struct Sticky {
    NodePool* pool = nullptr;  // where the channel's appends start meanwhile
    uint64_t next_ticket = 0;  // given to the channel's next append
    uint64_t next_done = 0;    // the ticket whose completion goes out next
    std::map<uint64_t, std::function<void()>> ready;  // finished, behind an earlier one
    bool delivering = false;   // a thread is handing completions out
  };
  // One command and where it stands; shared by its attempts.
  struct Call;
  void attempt(NodePool& pool, std::shared_ptr<Call> call, bool asking);
  void on_reply(std::shared_ptr<Call> call, Result<Reply> r, RespConnection& answered);
  // Runs `fire` once every earlier append of the channel has had its completion.
  void complete_in_order(const std::string& key, uint64_t ticket, std::function<void()> fire);
  std::unordered_map<std::string, Sticky> sticky_;  // cluster: channels with appends in flight
  std::unique_ptr<Topology> topology_;  // cluster only
  std::atomic<uint64_t> map_changes_{0};
  std::atomic<uint64_t> wait_short_{0};  // appends refused: too few replicas confirmed in time
  std::function<void(int64_t)> observe_;
  std::string wait_command_;  // "WAIT <wait_replicas> <wait_timeout_ms>", formatted
  std::atomic<size_t> appends_{0};
  std::atomic<uint64_t> moved_{0}, asked_{0}, tryagain_{0};
  std::atomic<bool> closed_{false};
  std::atomic<int64_t> down_since_ms_{0};
  mutable std::mutex mu_;
  std::condition_variable idle_;
  size_t outstanding_ = 0;  // every call not yet completed (guarded by mu_)
  std::unique_ptr<ArchiveReader> archive_;  // with postgres_url or dynamodb only

  static Error closed_error();

  FollowedChannels followed_;
  std::mutex watcher_mu_;  // held while the watcher is called, so that it can be unset
  RouteWatcher* watcher_ = nullptr;
  // Tells the watcher of a fresh map (route_mu_ not held).
  void notify_routes();
  // The pub/sub channel of a partition's feed `base` ({t.pk}:f) on `pool`: in a
  // cluster, base + ":<config epoch of the master>", so a new master means a new
  // channel (route_mu_ held, or a pool already looked up).
  std::string feed_name(const std::string& base, const NodePool* pool) const;
};

}  // namespace parley::store::valkey
