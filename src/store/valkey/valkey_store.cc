#include "store/valkey/valkey_store.h"

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdlib>

#include "common/clock.h"
#include "store/store_policy.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"
#include "store/valkey/scripts.h"

namespace parley::store::valkey {

namespace {
Error closed_error() { return Error{ErrorCode::kUnavailable, "store unavailable: shutting down", 1000}; }
}  // namespace

Result<std::unique_ptr<ValkeyStore>> ValkeyStore::open(runtime::LoopGroup& loops, ValkeyOptions opts) {
  if (opts.nodes.empty()) return Error{ErrorCode::kBadRequest, "valkey.nodes is empty"};
  if (opts.partitions == 0) return Error{ErrorCode::kBadRequest, "valkey.partitions must be > 0"};
  for (const auto& n : opts.nodes) {
    auto hp = parse_host_port(n);
    if (!hp) return Error{ErrorCode::kBadRequest, "valkey.nodes: " + n + ": " + hp.error().msg};
  }
  std::unique_ptr<ValkeyStore> s(new ValkeyStore(loops, std::move(opts)));
  if (s->opts_.cluster) {
    std::vector<HostPort> seeds;
    for (const auto& n : s->opts_.nodes) seeds.push_back(*parse_host_port(n));
    auto ranges = discover(seeds, static_cast<int>(s->opts_.command_timeout_ms));
    if (!ranges) return Error{ErrorCode::kUnavailable, ranges.error().msg};
    s->apply_slots(*ranges);
  }
  return s;
}

ValkeyStore::ValkeyStore(runtime::LoopGroup& loops, ValkeyOptions opts)
    : loops_(loops), opts_(std::move(opts)) {
  conn_opts_.command_timeout_ms = opts_.command_timeout_ms;
  conn_opts_.hello = {format_command({"SCRIPT", "LOAD", append_script().source}),
                      format_command({"SCRIPT", "LOAD", recover_script().source})};
  if (opts_.cluster) return;  // the pools come from CLUSTER SLOTS
  std::lock_guard lock(route_mu_);
  for (const auto& n : opts_.nodes) pool_index_locked(*parse_host_port(n));
}

size_t ValkeyStore::pool_index_locked(const HostPort& hp) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const HostPort& a = nodes_[i]->address();
    if (a.ip == hp.ip && a.port == hp.port) return i;
  }
  const unsigned first = static_cast<unsigned>(nodes_.size() * opts_.pool_size);
  nodes_.push_back(std::make_unique<NodePool>(loops_, hp, opts_.pool_size, first, conn_opts_));
  return nodes_.size() - 1;
}

void ValkeyStore::apply_slots(const std::vector<SlotRange>& ranges) {
  std::lock_guard lock(route_mu_);
  slots_.assign(16384, 0);
  for (const auto& r : ranges) {
    const auto i = static_cast<uint16_t>(pool_index_locked(r.master));
    for (uint32_t s = r.first; s <= r.last; ++s) slots_[s] = i;
  }
}

void ValkeyStore::on_moved(uint16_t slot, const HostPort& to) {
  {
    std::lock_guard lock(route_mu_);
    if (!slots_.empty()) slots_[slot] = static_cast<uint16_t>(pool_index_locked(to));
  }
  rediscover();
}

// CLUSTER SLOTS once more, off the loops; one at a time (a burst of MOVED replies
// after a resharding asks once).
void ValkeyStore::rediscover() {
  if (closed_.load() || rediscovering_.exchange(true)) return;
  if (rediscovery_.joinable()) rediscovery_.join();  // finished: the flag was clear
  std::vector<HostPort> seeds;
  {
    std::lock_guard lock(route_mu_);
    for (const auto& n : nodes_) seeds.push_back(n->address());
  }
  rediscovery_ = std::thread([this, seeds = std::move(seeds)] {
    auto ranges = discover(seeds, static_cast<int>(opts_.command_timeout_ms));
    if (ranges) apply_slots(*ranges);
    rediscovering_.store(false);
  });
}

ValkeyStore::~ValkeyStore() { shutdown(); }

NodePool& ValkeyStore::route_locked(const std::string& tag) {
  if (!slots_.empty()) return *nodes_[slots_[key_slot(tag)]];
  // Without a cluster, the partition number in the tag picks the node.
  const size_t p = tag.rfind(".p");
  const uint64_t k = p == std::string::npos ? 0 : std::strtoull(tag.c_str() + p + 2, nullptr, 10);
  return *nodes_[k % nodes_.size()];
}

NodePool& ValkeyStore::route(const std::string& tag) {
  std::lock_guard lock(route_mu_);
  return route_locked(tag);
}

void ValkeyStore::begin_op() {
  std::lock_guard lock(mu_);
  ++outstanding_;
}

void ValkeyStore::end_op() {
  std::lock_guard lock(mu_);
  if (--outstanding_ == 0) idle_.notify_all();
}

void ValkeyStore::call(NodePool& pool, const ChannelKey& key, std::string cmd, ReplyDone done) {
  const size_t h = std::hash<std::string>{}(key.key());
  // Kept for an ASK redirection (cluster only).
  std::string again = opts_.cluster ? cmd : std::string();
  pool.run(h, [this, h, cmd = std::move(cmd), again = std::move(again),
               done = std::move(done)](RespConnection& c) mutable {
    c.send(std::move(cmd), [this, h, &c, again = std::move(again),
                            done = std::move(done)](Result<Reply> r) mutable {
      const std::string err = r ? error_text(r.value().get()) : std::string();
      if (err.empty()) return done(std::move(r));
      // The node lost its scripts (SCRIPT FLUSH, a failover to a replica that never
      // loaded them): this call fails retryably and the next finds them loaded.
      if (err.rfind("NOSCRIPT", 0) == 0) c.send_hello();
      auto redirect = opts_.cluster ? parse_redirect(err) : std::nullopt;
      if (redirect && redirect->ask) {
        // The slot is being imported by another node: ask it, this once. Sent from
        // this loop, in reply order, so a channel's redirected calls stay in order.
        NodePool* target;
        {
          std::lock_guard lock(route_mu_);
          target = nodes_[pool_index_locked(redirect->to)].get();
        }
        return target->run(h, [again = std::move(again), done = std::move(done)](RespConnection& t) mutable {
          t.send(format_command({"ASKING"}), nullptr);
          t.send(std::move(again), std::move(done));
        });
      }
      // MOVED: this call fails retryably (its completion runs first, so nothing of
      // the channel can overtake it), then the slot points at its new master.
      done(std::move(r));
      if (redirect) on_moved(redirect->slot, redirect->to);
    });
  });
}

void ValkeyStore::append(AppendRequest req, AppendDone done) {
  if (closed_.load()) return done(AppendOutcome{closed_error()});
  const ChannelKeys k = channel_keys(req.key, opts_.partitions);
  const StoredMessage& m = req.msg;
  std::string cmd = format_command(
      {"EVALSHA", append_script().sha1, "5", k.seq, k.history, k.dedupe, k.dedupe_by_time, k.wal,
       std::to_string(m.seq), std::to_string(m.ts_ms), m.from, m.id, m.body,
       std::to_string(history_keep(req.history_limit)), std::to_string(history_slack(req.history_limit)),
       std::to_string(uint64_t{req.dedupe_window_s} * 1000), req.key.channel,
       std::to_string(opts_.wal_max_len)});
  appends_.fetch_add(1, std::memory_order_relaxed);
  begin_op();
  NodePool* pool;
  std::string sticky_key;
  {
    std::lock_guard lock(route_mu_);
    if (opts_.cluster) {
      // A channel's appends in flight share one connection, whatever moves.
      sticky_key = req.key.key();
      Sticky& st = sticky_[sticky_key];
      if (st.in_flight++ == 0) st.pool = &route_locked(k.tag);
      pool = st.pool;
    } else {
      pool = &route_locked(k.tag);
    }
  }
  const int64_t start = steady_ns();
  call(*pool, req.key, std::move(cmd),
       [this, start, sticky_key = std::move(sticky_key), done = std::move(done)](Result<Reply> r) mutable {
         if (r && observe_) observe_(steady_ns() - start);
         AppendOutcome out = parse_append(r);
         if (!sticky_key.empty()) {
           std::lock_guard lock(route_mu_);
           auto it = sticky_.find(sticky_key);
           if (it != sticky_.end() && --it->second.in_flight == 0) sticky_.erase(it);
         }
         appends_.fetch_sub(1, std::memory_order_relaxed);
         done(std::move(out));
         end_op();
       });
}

void ValkeyStore::recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) {
  if (closed_.load()) return done(closed_error());
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  std::string cmd = format_command({"EVALSHA", recover_script().sha1, "3", k.seq, k.dedupe,
                                    k.dedupe_by_time, std::to_string(dedupe_cutoff_ms)});
  begin_op();
  call(route(k.tag), key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
    done(parse_recover(r));
    end_op();
  });
}

void ValkeyStore::read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) {
  if (closed_.load()) return done(closed_error());
  if (limit == 0 || after == UINT64_MAX) return done(std::vector<StoredMessage>{});
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  std::string cmd = format_command(
      {"XRANGE", k.history, std::to_string(after + 1), "+", "COUNT", std::to_string(limit)});
  begin_op();
  call(route(k.tag), key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
    done(parse_entries(r, false));
    end_op();
  });
}

void ValkeyStore::read_before(const ChannelKey& key, uint64_t before, uint32_t limit, ReadDone done) {
  if (closed_.load()) return done(closed_error());
  if (limit == 0 || before == 0) return done(std::vector<StoredMessage>{});
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  // An incomplete end id "<n>" means "<n>-<max>": every entry of seq n.
  const std::string end = before == UINT64_MAX ? "+" : std::to_string(before - 1);
  std::string cmd = format_command({"XREVRANGE", k.history, end, "-", "COUNT", std::to_string(limit)});
  begin_op();
  call(route(k.tag), key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
    done(parse_entries(r, true));
    end_op();
  });
}

void ValkeyStore::flush() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return outstanding_ == 0; });
}

void ValkeyStore::shutdown() {
  if (closed_.exchange(true)) return;
  {
    std::unique_lock lock(mu_);
    idle_.wait_for(lock, std::chrono::milliseconds(opts_.command_timeout_ms),
                   [this] { return outstanding_ == 0; });
  }
  if (rediscovery_.joinable()) rediscovery_.join();
  std::vector<NodePool*> pools;
  {
    std::lock_guard lock(route_mu_);
    for (auto& n : nodes_) pools.push_back(n.get());
  }
  for (auto* n : pools) n->close(1000);
}

StoreHealth ValkeyStore::health() const {
  StoreHealth h;
  bool down = false;
  {
    std::lock_guard lock(route_mu_);
    for (const auto& n : nodes_) down = down || n->down();
  }
  auto& since = const_cast<std::atomic<int64_t>&>(down_since_ms_);
  if (!down) {
    since.store(0, std::memory_order_relaxed);
    return h;
  }
  int64_t expected = 0;
  since.compare_exchange_strong(expected, wall_ms());
  h.writable = false;
  h.reason = "unreachable";
  h.detail = "a valkey node does not answer";
  h.since_ms = since.load(std::memory_order_relaxed);
  return h;
}

std::vector<NodeStats> ValkeyStore::node_stats() const {
  std::vector<NodeStats> out;
  std::lock_guard lock(route_mu_);
  for (const auto& n : nodes_) out.push_back(NodeStats{n->name(), n->queued(), n->in_flight(), n->down()});
  return out;
}

}  // namespace parley::store::valkey
