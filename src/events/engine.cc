#include "events/engine.h"


#include <cstdio>
#include <random>

#include "common/check.h"
#include "events/topic_channel.h"
#include "store/channel_id.h"

namespace parley::events {

Engine::Engine(runtime::LoopGroup& loops, store::Store& store, metrics::Metrics& metrics,
               seqlog::Options follow, cluster::Cluster* cluster)
    : loops_(loops), store_(store), metrics_(metrics), topics_(loops.size()), follow_(follow), cluster_(cluster) {
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  node_ = id;
}

Engine::~Engine() = default;

unsigned Engine::loop_of(std::string_view tenant, std::string_view topic) const {
  const std::string key = store::ChannelId::key_of(tenant, topic);
  return static_cast<unsigned>(std::hash<std::string>{}(key) % loops_.size());
}

Topic& Engine::topic(const TenantConfig& tenant, const std::string& name) {
  const unsigned loop = loop_of(tenant.id, name);
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(loop));
  std::string key = store::ChannelId::key_of(tenant.id, name);
  auto& table = topics_[loop];
  auto it = table.find(key);
  if (it == table.end()) {
    const TopicConfig* cfg = tenant.topic(name);
    PARLEY_CHECK(cfg != nullptr);  // the session checked the name against the config
    auto stats = std::make_shared<TopicStats>(tenant.id + "/" + name, cfg->partitions);
    {
      std::lock_guard lock(stats_mu_);
      stats_.push_back(stats);
    }
    it = table.emplace(std::move(key), std::make_unique<Topic>(loop, loops_, store_, tenant, name,
                                                               *cfg, std::move(stats), metrics_,
                                                               TopicNodes{node_, cluster_, this}, follow_))
             .first;
    it->second->rebuild_boards();
  }
  return *it->second;
}

Partition* Engine::partition_of_channel(const store::ChannelId& id) {
  const auto pc = parse_partition_channel(id.channel);
  if (!pc) return nullptr;  // a group's log, the snapshots, the key hash
  auto& table = topics_[loop_of(id.tenant, pc->topic)];
  auto it = table.find(store::ChannelId::key_of(id.tenant, pc->topic));
  if (it == table.end() || pc->p >= it->second->partitions()) return nullptr;
  return &it->second->partition(pc->p);
}

void Engine::on_message(const store::ChannelId& id, store::StoredMessage msg) {
  const auto topic = topic_of_channel(id.channel);
  if (!topic) return;
  loops_.run_on(loop_of(id.tenant, *topic), [this, id, msg = std::move(msg)]() mutable {
    if (Partition* p = partition_of_channel(id)) p->on_feed(std::move(msg));
  });
}

void Engine::on_resync(const store::ChannelId& id) {
  const auto topic = topic_of_channel(id.channel);
  if (!topic) return;
  loops_.run_on(loop_of(id.tenant, *topic), [this, id] {
    if (Partition* p = partition_of_channel(id)) p->on_resync();
  });
}

template <typename Fn>
void Engine::on_topic(const TenantConfig* tenant, const std::string& name, Fn&& fn) {
  loops_.run_on(loop_of(tenant->id, name),
                [this, tenant, name, fn = std::forward<Fn>(fn)]() mutable { fn(topic(*tenant, name)); });
}

void Engine::emit(EmitRequest req) {
  const TenantConfig* t = req.tenant;
  const std::string name = req.topic;
  on_topic(t, name, [req = std::move(req)](Topic& tp) mutable { tp.emit(std::move(req)); });
}

void Engine::tail(TailRequest req) {
  const TenantConfig* t = req.tenant;
  const std::string name = req.topic;
  on_topic(t, name, [req = std::move(req)](Topic& tp) mutable { tp.tail(std::move(req)); });
}

void Engine::consume(ConsumeRequest req) {
  const TenantConfig* t = req.tenant;
  const std::string name = req.topic;
  on_topic(t, name, [req = std::move(req)](Topic& tp) mutable { tp.consume(std::move(req)); });
}

void Engine::commit(CommitRequest req) {
  const TenantConfig* t = req.tenant;
  const std::string name = req.topic;
  on_topic(t, name, [req = std::move(req)](Topic& tp) mutable { tp.commit(std::move(req)); });
}

void Engine::rank(RankRequest req) {
  auto bit = req.tenant->leaderboards.find(req.board);
  PARLEY_CHECK(bit != req.tenant->leaderboards.end());  // checked by the caller
  const TenantConfig* t = req.tenant;
  on_topic(t, bit->second.topic, [this, req = std::move(req)](Topic& tp) mutable {
    if (Leaderboard* b = tp.board(req.board)) return b->rank(std::move(req));
    // A board added to a running topic by a reload: its topic keeps the boards
    // it was created with until a restart.
    loops_.run_on(req.reply_loop, [done = std::move(req.done)] {
      done(Error{ErrorCode::kNotFound, "board not running until a restart"}, {}, {});
    });
  });
}

void Engine::watch_board(const TenantConfig* tenant, const std::string& board,
                         const std::string& round, std::weak_ptr<EventSink> sink,
                         uint64_t conn, const std::string& user) {
  auto bit = tenant->leaderboards.find(board);
  if (bit == tenant->leaderboards.end()) return;
  on_topic(tenant, bit->second.topic,
           [board, round, sink = std::move(sink), conn, user](Topic& tp) mutable {
             if (Leaderboard* b = tp.board(board)) b->watch(round, std::move(sink), conn, user);
           });
}

void Engine::unwatch_board(const TenantConfig* tenant, const std::string& board,
                           const std::string& round, uint64_t conn) {
  auto bit = tenant->leaderboards.find(board);
  if (bit == tenant->leaderboards.end()) return;
  on_topic(tenant, bit->second.topic, [board, round, conn](Topic& tp) {
    if (Leaderboard* b = tp.board(board)) b->unwatch(round, conn);
  });
}

void Engine::start(const TenantRegistry& tenants) {
  tenants.for_each([this](const TenantRuntime& t) {
    const TenantConfig* cfg = &t.config();
    for (const auto& [name, bc] : cfg->leaderboards) on_topic(cfg, bc.topic, [](Topic&) {});
  });
}

void Engine::leave(const TenantConfig* tenant, const std::string& topic, const std::string& group,
                   uint64_t conn, unsigned reply_loop, std::function<void()> done) {
  on_topic(tenant, topic, [group, conn, reply_loop, done = std::move(done)](Topic& tp) mutable {
    tp.leave(group, conn, reply_loop, std::move(done));
  });
}

void Engine::disconnect(const TenantConfig* tenant, const std::string& topic, uint64_t conn) {
  on_topic(tenant, topic, [conn](Topic& tp) { tp.disconnect(conn); });
}

std::vector<std::shared_ptr<TopicStats>> Engine::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace parley::events
