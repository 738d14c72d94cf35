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
  if (opts.cluster) return Error{ErrorCode::kBadRequest, "valkey.cluster is not supported yet"};
  for (const auto& n : opts.nodes) {
    auto hp = parse_host_port(n);
    if (!hp) return Error{ErrorCode::kBadRequest, "valkey.nodes: " + n + ": " + hp.error().msg};
  }
  std::unique_ptr<ValkeyStore> s(new ValkeyStore(loops, std::move(opts)));
  return s;
}

ValkeyStore::ValkeyStore(runtime::LoopGroup& loops, ValkeyOptions opts)
    : loops_(loops), opts_(std::move(opts)) {
  ConnectionOptions co;
  co.command_timeout_ms = opts_.command_timeout_ms;
  co.hello = {format_command({"SCRIPT", "LOAD", append_script().source}),
              format_command({"SCRIPT", "LOAD", recover_script().source})};
  unsigned first = 0;
  for (const auto& n : opts_.nodes) {
    nodes_.push_back(std::make_unique<NodePool>(loops_, *parse_host_port(n), opts_.pool_size, first, co));
    first += opts_.pool_size;
  }
}

ValkeyStore::~ValkeyStore() { shutdown(); }

NodePool& ValkeyStore::node_for(const std::string& tag) {
  // Without a cluster, the partition number in the tag picks the node.
  const size_t p = tag.rfind(".p");
  const uint64_t k = p == std::string::npos ? 0 : std::strtoull(tag.c_str() + p + 2, nullptr, 10);
  return *nodes_[k % nodes_.size()];
}

void ValkeyStore::begin_op() {
  std::lock_guard lock(mu_);
  ++outstanding_;
}

void ValkeyStore::end_op() {
  std::lock_guard lock(mu_);
  if (--outstanding_ == 0) idle_.notify_all();
}

void ValkeyStore::call(const std::string& tag, const ChannelKey& key, std::string cmd, ReplyDone done) {
  const size_t h = std::hash<std::string>{}(key.key());
  node_for(tag).run(h, [cmd = std::move(cmd), done = std::move(done)](RespConnection& c) mutable {
    c.send(std::move(cmd), [&c, done = std::move(done)](Result<Reply> r) mutable {
      // The node lost its scripts (SCRIPT FLUSH, a failover to a replica that never
      // loaded them): this call fails retryably and the next finds them loaded.
      if (r && error_text(r.value().get()).rfind("NOSCRIPT", 0) == 0) c.send_hello();
      done(std::move(r));
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
  const int64_t start = steady_ns();
  call(k.tag, req.key, std::move(cmd),
       [this, start, done = std::move(done)](Result<Reply> r) mutable {
         if (r && observe_) observe_(steady_ns() - start);
         AppendOutcome out = parse_append(r);
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
  call(k.tag, key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
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
  call(k.tag, key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
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
  call(k.tag, key, std::move(cmd), [this, done = std::move(done)](Result<Reply> r) mutable {
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
  for (auto& n : nodes_) n->close(1000);
}

StoreHealth ValkeyStore::health() const {
  StoreHealth h;
  bool down = false;
  for (const auto& n : nodes_) down = down || n->down();
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
  for (const auto& n : nodes_) out.push_back(NodeStats{n->name(), n->queued(), n->in_flight(), n->down()});
  return out;
}

}  // namespace parley::store::valkey
