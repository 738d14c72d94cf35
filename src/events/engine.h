// The event pipeline (PROTOCOL.md "Event streams and leaderboards"): each
// configured topic lives on one loop (a hash of tenant + topic) as a Topic,
// created there on first use. Implements EventService by posting each
// request to its topic's loop; the topic answers on the request's reply loop.
//
// Any thread calls in. Topics are created, used and destroyed only on their
// loop (destroyed with the engine, after the loops have stopped).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster.h"
#include "events/topic.h"
#include "events/topic_stats.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "events/event_service.h"
#include "seqlog/sequenced_log.h"
#include "tenant/tenant_registry.h"
#include "store/store.h"

namespace parley::events {

class Engine final : public EventService, private cluster::FeedListener {
 public:
  // `follow`: how a topic partition follows a store that numbers it (the
  // channels' knobs: seqlog::Options). `cluster`: the other nodes of such a
  // store (null: this node alone).
  Engine(runtime::LoopGroup& loops, store::Store& store, metrics::Metrics& metrics,
         seqlog::Options follow = {}, cluster::Cluster* cluster = nullptr);
  ~Engine() override;

  void emit(EmitRequest req) override;
  void tail(TailRequest req) override;
  void consume(ConsumeRequest req) override;
  void commit(CommitRequest req) override;
  void rank(RankRequest req) override;
  void leave(const TenantConfig* tenant, const std::string& topic, const std::string& group,
             uint64_t conn, unsigned reply_loop, std::function<void()> done) override;
  void disconnect(const TenantConfig* tenant, const std::string& topic, uint64_t conn) override;
  void watch_board(const TenantConfig* tenant, const std::string& board, const std::string& round,
                   std::weak_ptr<EventSink> sink, uint64_t conn,
                   const std::string& user) override;
  void unwatch_board(const TenantConfig* tenant, const std::string& board,
                     const std::string& round, uint64_t conn) override;

  // Creates, on their loops, every topic that feeds a leaderboard, so that the
  // boards are rebuilt and pushed from the start. After the loops started.
  // The configs are the registry's snapshots, which live as long as it.
  void start(const TenantRegistry& tenants);

  unsigned loop_of(std::string_view tenant, std::string_view topic) const;

  // Every topic created so far (a scrape reads them; any thread).
  std::vector<std::shared_ptr<TopicStats>> stats() const;

 private:
  // On the topic's loop: the topic, created on first use.
  Topic& topic(const TenantConfig& tenant, const std::string& name);
  // On the topic's loop: the partition of a store channel "<topic>\x1f<p>", if
  // that topic exists here.
  Partition* partition_of_channel(const store::ChannelId& id);
  template <typename Fn>
  void on_topic(const TenantConfig* tenant, const std::string& name, Fn&& fn);
  // Shared store (Store::assigns_seq): what any node commits into a topic's
  // partitions, the channels "<topic>\x1f<p>", which each partition watches in
  // the broker with the engine as listener. Any thread; posted to the topic's
  // loop; a partition gone meanwhile ignores it.
  void on_message(const store::ChannelId& id, store::StoredMessage msg) override;
  void on_resync(const store::ChannelId& id) override;
  void on_note(const store::ChannelId&, std::string) override {}  // partitions have no presence

  runtime::LoopGroup& loops_;
  store::Store& store_;
  metrics::Metrics& metrics_;
  // Per loop, touched only by that loop: key ChannelId::key_of(tenant, topic).
  std::vector<std::unordered_map<std::string, std::unique_ptr<Topic>>> topics_;
  mutable std::mutex stats_mu_;
  std::vector<std::shared_ptr<TopicStats>> stats_;
  seqlog::Options follow_;
  std::string node_;  // random per start: the name this node holds consumer groups under
  cluster::Cluster* cluster_;
};

}  // namespace parley::events
