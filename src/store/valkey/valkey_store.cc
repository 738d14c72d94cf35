#include "store/valkey/valkey_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdlib>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "store/postgres/libpq.h"
#include "store/postgres/pg_history.h"
#include "store/dynamodb/dynamo_history.h"
#include "store/store_policy.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"
#include "store/valkey/scripts.h"

namespace parley::store::valkey {

Error ValkeyStore::closed_error() {
  return Error{ErrorCode::kUnavailable, "store unavailable: shutting down", 1000};
}

Result<std::unique_ptr<ValkeyStore>> ValkeyStore::open(runtime::LoopGroup& loops, ValkeyOptions opts) {
  if (opts.nodes.empty()) return Error{ErrorCode::kBadRequest, "valkey.nodes is empty"};
  // WAIT holds its connection: longer than command_timeout_ms would look like a hung node.
  if (opts.wait_replicas > 0 && opts.wait_timeout_ms >= opts.command_timeout_ms) {
    return Error{ErrorCode::kBadRequest, "valkey.wait_timeout_ms must be below valkey.command_timeout_ms"};
  }
  if (opts.partitions == 0) return Error{ErrorCode::kBadRequest, "valkey.partitions must be > 0"};
  for (const auto& n : opts.nodes) {
    auto hp = parse_host_port(n);
    if (!hp) return Error{ErrorCode::kBadRequest, "valkey.nodes: " + n + ": " + hp.error().msg};
  }
  // libpq is loaded here, not at its first read, so that a missing library stops the start.
  if (!opts.postgres_url.empty()) {
    if (auto lib = postgres::libpq(); !lib) return lib.error();
  }
  std::unique_ptr<ValkeyStore> s(new ValkeyStore(loops, std::move(opts)));
  if (s->opts_.cluster) {
    std::vector<HostPort> seeds;
    for (const auto& n : s->opts_.nodes) seeds.push_back(*parse_host_port(n));
    Topology::Options to;
    to.ask_timeout_ms = static_cast<int>(std::min<uint32_t>(s->opts_.command_timeout_ms, 1000));
    to.idle_refresh_ms = static_cast<int>(std::max<uint32_t>(s->opts_.topology_refresh_ms, 100));
    Topology::Hooks th;
    ValkeyStore* self = s.get();
    th.apply = [self](const ClusterView& v) { self->apply_view(v); };
    th.silent = [self](const HostPort& hp) {
      std::lock_guard lock(self->route_mu_);
      for (const auto& n : self->nodes_) {
        if (n->address().ip == hp.ip && n->address().port == hp.port) return n->down();
      }
      return false;
    };
    th.degraded = [self] { return self->degraded(); };
    s->topology_ = std::make_unique<Topology>(std::move(seeds), to, std::move(th));
    // Not reachable now is not a reason to stop: the node stays unready
    // (/healthz 503) and the Topology keeps asking.
    if (auto view = s->topology_->discover_once()) {
      s->apply_view(*view);
    } else {
      spdlog::warn("valkey cluster: {}; asking again in the background", view.error().msg);
    }
    s->topology_->start();
  }
  return s;
}

ValkeyStore::ValkeyStore(runtime::LoopGroup& loops, ValkeyOptions opts)
    : loops_(loops), opts_(std::move(opts)) {
  conn_opts_.command_timeout_ms = opts_.command_timeout_ms;
  wait_command_ =
      format_command({"WAIT", std::to_string(opts_.wait_replicas), std::to_string(opts_.wait_timeout_ms)});
  if (!opts_.postgres_url.empty()) {
    archive_ = std::make_unique<postgres::PgHistory>(opts_.postgres_url, opts_.postgres_readers,
                                                     opts_.postgres_timeout_ms);
  } else if (opts_.dynamodb) {
    archive_ = std::make_unique<dynamodb::DynamoHistory>(*opts_.dynamodb, opts_.dynamodb_readers);
  }
  conn_opts_.hello = {format_command({"SCRIPT", "LOAD", append_script().source}),
                      format_command({"SCRIPT", "LOAD", recover_script().source}),
                      format_command({"SCRIPT", "LOAD", read_script().source})};
  if (opts_.cluster) {
    // The pools come from the cluster's map; a connection that fails asks for a new one.
    slots_.assign(16384, kUnmapped);
    conn_opts_.on_failure = [this] {
      if (topology_) topology_->request();
    };
    return;
  }
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
  // Tried at once, so that health knows whether it answers before traffic comes.
  nodes_.back()->probe();
  return nodes_.size() - 1;
}

void ValkeyStore::apply_view(const ClusterView& view) {
  if (closed_.load()) return;
  {
    std::lock_guard lock(route_mu_);
    bool changed = false;
    for (const auto& r : view.ranges) {
      const auto i = static_cast<uint16_t>(pool_index_locked(r.master));
      if (nodes_[i]->epoch() != r.epoch) changed = true;
      nodes_[i]->set_epoch(r.epoch);
      for (uint32_t s = r.first; s <= r.last; ++s) {
        changed = changed || slots_[s] != i;
        slots_[s] = i;
      }
    }
    if (changed) {
      map_changes_.fetch_add(1, std::memory_order_relaxed);
      std::string masters;
      for (const auto& r : view.ranges) {
        masters += " " + std::to_string(r.first) + "-" + std::to_string(r.last) + "@" + r.master.ip + ":" +
                   std::to_string(r.master.port);
      }
      spdlog::warn("valkey cluster: the map changed; slots now served by{}", masters);
    }
  }
  notify_routes();
}

void ValkeyStore::notify_routes() {
  std::lock_guard lock(watcher_mu_);
  if (watcher_) watcher_->routes_changed();
}

void ValkeyStore::set_route_watcher(RouteWatcher* w) {
  std::lock_guard lock(watcher_mu_);
  watcher_ = w;
}

void ValkeyStore::request_map() {
  if (topology_) topology_->request();
}

std::string ValkeyStore::feed_name(const std::string& base, const NodePool* pool) const {
  if (!opts_.cluster || !pool) return base;
  return base + ":" + std::to_string(pool->epoch());
}

std::optional<FeedRoute> ValkeyStore::feed_route(const std::string& feed) {
  std::lock_guard lock(route_mu_);
  NodePool* pool = route_locked(feed.substr(0, feed.find('}') + 1));
  if (!pool) return std::nullopt;
  size_t i = 0;
  while (nodes_[i].get() != pool) ++i;
  return FeedRoute{i, pool->address(), feed_name(feed, pool)};
}

void ValkeyStore::check_losses(std::vector<std::pair<ChannelId, uint64_t>> channels) {
  for (auto& [id, seen] : channels) {
    const ChannelKeys k = channel_keys(id, opts_.partitions);
    // EVAL, not EVALSHA: once per followed channel per failover.
    std::string cmd =
        format_command({"EVAL", check_loss_script().source, "2", k.seq, k.epoch, std::to_string(seen)});
    begin_op();
    call(route(k.tag), id, k.tag, std::move(cmd), true, [this, id = id](Result<Reply> r) {
      const redisReply* x = r ? r.value().get() : nullptr;
      if (x && x->type == REDIS_REPLY_ARRAY && x->elements == 2 && x->element[0]->type == REDIS_REPLY_INTEGER &&
          x->element[0]->integer >= 0 && x->element[1]->type == REDIS_REPLY_INTEGER &&
          x->element[1]->integer >= 1 && x->element[1]->integer <= UINT32_MAX) {
        // The store's last seq is what this node has seen now; the channel's
        // next message gets the one after it.
        const auto last = static_cast<uint64_t>(x->element[0]->integer);
        const auto epoch = static_cast<uint32_t>(x->element[1]->integer);
        if (followed_.note_seen(id, last, epoch, true)) log_loss(id, last + 1, epoch);
      }
      end_op();
    });
  }
}

void ValkeyStore::on_moved(uint16_t slot, const HostPort& to) {
  {
    std::lock_guard lock(route_mu_);
    if (!slots_.empty()) slots_[slot] = static_cast<uint16_t>(pool_index_locked(to));
  }
  if (topology_) topology_->request();
}

ValkeyStore::~ValkeyStore() { shutdown(); }

NodePool* ValkeyStore::route_locked(const std::string& tag) {
  if (opts_.cluster) {
    const uint16_t i = slots_[key_slot(tag)];
    return i == kUnmapped ? nullptr : nodes_[i].get();
  }
  // Without a cluster, the partition number in the tag picks the node.
  const size_t p = tag.rfind(".p");
  const uint64_t k = p == std::string::npos ? 0 : std::strtoull(tag.c_str() + p + 2, nullptr, 10);
  return nodes_[k % nodes_.size()].get();
}

NodePool* ValkeyStore::route(const std::string& tag) {
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

struct ValkeyStore::Call {
  std::string tag;
  size_t hash;           // picks the connection of a node: one per channel
  std::string cmd;
  ReplyDone done;
  bool resend;           // may be sent again after MOVED / TRYAGAIN
  int64_t deadline_ns;   // no attempt starts after it
  int tries = 0;         // TRYAGAIN answers so far (the backoff doubles)
  int hops = 0;          // MOVED / ASK followed so far
  Redirected redirected;  // see call()
  int attempts = 0;       // sends so far (a resend's WAIT must come after it)
};

namespace {
// Redirections one call follows: a resharding moves a slot once; nodes that keep
// sending a call back and forth disagree about the map, and the call fails.
constexpr int kMaxHops = 5;
}  // namespace

void ValkeyStore::call(NodePool* pool, const ChannelKey& key, const std::string& tag, std::string cmd,
                       bool resend, ReplyDone done, Redirected redirected) {
  if (!pool) {
    return done(Error{ErrorCode::kUnavailable, "store unavailable: no valkey node answered yet", 1000});
  }
  auto c = std::make_shared<Call>(Call{tag, std::hash<std::string>{}(key.key()), std::move(cmd),
                                       std::move(done), resend && opts_.cluster,
                                       steady_ns() + int64_t{opts_.command_timeout_ms} * 1'000'000, 0, 0,
                                       std::move(redirected)});
  attempt(*pool, std::move(c), false);
}

void ValkeyStore::attempt(NodePool& pool, std::shared_ptr<Call> call, bool asking) {
  const size_t h = call->hash;
  pool.run(h, [this, asking, call = std::move(call)](RespConnection& conn) mutable {
    ++call->attempts;
    if (asking) conn.send(format_command({"ASKING"}), nullptr);
    // Without a cluster nothing redirects: the command moves into the send.
    std::string cmd = opts_.cluster ? call->cmd : std::move(call->cmd);
    conn.send(std::move(cmd), [this, &conn, call = std::move(call)](Result<Reply> r) mutable {
      // The node lost its scripts (SCRIPT FLUSH, a failover to a replica that never
      // loaded them): this call fails retryably and the next finds them loaded.
      if (r && error_text(r.value().get()).rfind("NOSCRIPT", 0) == 0) conn.send_hello();
      on_reply(std::move(call), std::move(r), conn);
    });
  });
}

// On the loop of the connection that answered.
void ValkeyStore::on_reply(std::shared_ptr<Call> call, Result<Reply> r, RespConnection& answered) {
  const std::string err = r ? error_text(r.value().get()) : std::string();
  auto redirect = opts_.cluster && !err.empty() ? parse_redirect(err) : std::nullopt;
  const bool tryagain = opts_.cluster && err.rfind("TRYAGAIN", 0) == 0;
  // The cluster lost a master and has not promoted its replica yet (or no
  // majority): fails `unavailable`, and the map is read again until it has.
  if (opts_.cluster && err.rfind("CLUSTERDOWN", 0) == 0 && topology_) topology_->request();
  if (!redirect && !tryagain) {
    if (call->attempts > 1 && call->redirected) call->redirected(answered);
    return call->done(std::move(r));
  }
  (tryagain ? tryagain_ : redirect->ask ? asked_ : moved_).fetch_add(1, std::memory_order_relaxed);
  if (redirect && ++call->hops > kMaxHops) return call->done(std::move(r));
  if (redirect && redirect->ask) {
    // The slot is being imported by another node: ask it. Sent from this loop, in
    // reply order, so a channel's redirected calls stay in order.
    NodePool* target;
    {
      std::lock_guard lock(route_mu_);
      target = nodes_[pool_index_locked(redirect->to)].get();
    }
    return attempt(*target, std::move(call), true);
  }
  if (redirect) {
    // MOVED: the slot now points at its new master (and the whole map is read
    // again in the background). Nothing was written: send it there, or fail
    // retryably; the completion runs first so nothing of the channel overtakes it.
    const bool resend = call->resend && !closed_.load() && steady_ns() < call->deadline_ns;
    if (!resend) call->done(std::move(r));
    on_moved(redirect->slot, redirect->to);
    if (resend) {
      NodePool* pool = route(call->tag);  // before `call` moves into the argument
      if (!pool) return call->done(std::move(r));
      attempt(*pool, std::move(call), false);
    }
    return;
  }
  // TRYAGAIN: a multi-key call met a slot whose keys are half migrated (some on
  // each node); nothing ran. It settles within a MIGRATE batch or two.
  const int64_t backoff_ns = std::min<int64_t>(int64_t{5'000'000} << std::min(call->tries, 5), 100'000'000);
  const int loop = runtime::LoopGroup::current();
  if (!call->resend || closed_.load() || loop < 0 || steady_ns() + backoff_ns >= call->deadline_ns) {
    return call->done(std::move(r));
  }
  ++call->tries;
  auto timer = std::make_shared<boost::asio::steady_timer>(loops_.loop(static_cast<unsigned>(loop)),
                                                           std::chrono::nanoseconds(backoff_ns));
  timer->async_wait([this, timer, call = std::move(call)](const boost::system::error_code&) mutable {
    if (closed_.load()) return call->done(closed_error());
    NodePool* pool = route(call->tag);
    if (!pool) return call->done(closed_error());
    attempt(*pool, std::move(call), false);
  });
}

void ValkeyStore::recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) {
  if (closed_.load()) return done(closed_error());
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  std::string cmd = format_command({"EVALSHA", recover_script().sha1, "4", k.seq, k.dedupe,
                                    k.dedupe_by_time, k.epoch, std::to_string(dedupe_cutoff_ms)});
  begin_op();
  call(route(k.tag), key, k.tag, std::move(cmd), true,
       [this, key, done = std::move(done)](Result<Reply> r) mutable {
         auto rec = parse_recover(r);
         if (rec) followed_.note_seen(key, rec->last_seq, rec->epoch, true);
         done(std::move(rec));
         end_op();
       });
}

void ValkeyStore::read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) {
  if (closed_.load()) return done(closed_error());
  if (limit == 0 || after == UINT64_MAX) return done(std::vector<StoredMessage>{});
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  // The read script: XRANGE, and the current versions of changed messages.
  std::string cmd = format_command({"EVALSHA", read_script().sha1, "1", k.history, "",
                                    std::to_string(after + 1), std::to_string(limit), k.amends});
  begin_op();
  call(route(k.tag), key, k.tag, std::move(cmd), true,
       [this, key, after, limit, done = std::move(done)](Result<Reply> r) mutable {
         auto got = parse_page(r, false);
         if (got && !got->empty()) followed_.note_seen(key, got->back().seq, got->back().epoch, false);
         if (got && archive_) {
           fill_after(key, after, limit, std::move(*got), std::move(done));
         } else {
           done(std::move(got));
         }
         end_op();
       });
}

// The stream always keeps the channel's latest message, so an empty answer means
// nothing was written after `after`; an answer starting above after + 1 means the
// start was trimmed, and the archive has it (as far as the persister got).
void ValkeyStore::fill_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                             std::vector<StoredMessage> recent, ReadDone done) {
  if (recent.empty() || recent.front().seq == after + 1) return done(std::move(recent));
  const uint64_t hi = recent.front().seq;
  begin_op();
  archive_->read(key, after + 1, hi, limit,
                 false, [this, limit, recent = std::move(recent), done = std::move(done)](
                            Result<std::vector<StoredMessage>> old) mutable {
                   if (old) {
                     for (auto& m : recent) {
                       if (old->size() >= limit) break;
                       old->push_back(std::move(m));
                     }
                   }
                   done(std::move(old));
                   end_op();
                 });
}

void ValkeyStore::read_before(const ChannelKey& key, uint64_t before, uint32_t limit, ReadDone done) {
  if (closed_.load()) return done(closed_error());
  if (limit == 0 || before == 0) return done(std::vector<StoredMessage>{});
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  // An incomplete end id "<n>" means "<n>-<max>": every entry of seq n.
  const std::string end = before == UINT64_MAX ? "+" : std::to_string(before - 1);
  std::string cmd = format_command({"EVALSHA", read_script().sha1, "1", k.history, "1", end,
                                    std::to_string(limit), k.amends});
  begin_op();
  call(route(k.tag), key, k.tag, std::move(cmd), true,
       [this, key, before, limit, done = std::move(done)](Result<Reply> r) mutable {
         auto got = parse_page(r, true);
         if (got && archive_) {
           fill_before(key, before, limit, std::move(*got), std::move(done));
         } else {
           done(std::move(got));
         }
         end_op();
       });
}

// Fewer than `limit` below `before` in the stream, and the oldest of them above
// seq 1: the rest was trimmed to the archive. Nothing at all below `before`:
// either the channel is empty (the stream is, too: it always keeps the latest)
// or everything below `before` was trimmed; one more XRANGE tells which.
void ValkeyStore::fill_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                              std::vector<StoredMessage> recent, ReadDone done) {
  if (recent.size() >= limit || (!recent.empty() && recent.front().seq <= 1)) {
    return done(std::move(recent));
  }
  auto from_archive = [this, key, limit, done](uint64_t hi, std::vector<StoredMessage> recent) mutable {
    begin_op();
    const uint32_t want = limit - static_cast<uint32_t>(recent.size());
    archive_->read(key, 1, hi, want, true,
                   [this, recent = std::move(recent), done = std::move(done)](
                       Result<std::vector<StoredMessage>> old) mutable {
                     if (old) {
                       for (auto& m : recent) old->push_back(std::move(m));
                     }
                     done(std::move(old));
                     end_op();
                   });
  };
  if (!recent.empty()) return from_archive(recent.front().seq, std::move(recent));
  const ChannelKeys k = channel_keys(key, opts_.partitions);
  begin_op();
  call(route(k.tag), key, k.tag, format_command({"XRANGE", k.history, "-", "+", "COUNT", "1"}), true,
       [this, before, done, from_archive = std::move(from_archive)](Result<Reply> r) mutable {
         auto first = parse_entries(r, false);
         if (!first) {
           done(std::move(first));
         } else if (first->empty()) {
           done(std::vector<StoredMessage>{});
         } else {
           from_archive(std::min(before, first->front().seq), {});
         }
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
  if (topology_) topology_->stop();
  std::vector<NodePool*> pools;
  {
    std::lock_guard lock(route_mu_);
    for (auto& n : nodes_) pools.push_back(n.get());
  }
  for (auto* n : pools) n->close(1000);
  std::lock_guard lock(watcher_mu_);
  if (watcher_) watcher_->store_closed();
}

void ValkeyStore::command(const ChannelId& id, std::string cmd, ReplyDone done) {
  if (closed_.load()) return done(closed_error());
  const ChannelKeys k = channel_keys(id, opts_.partitions);
  begin_op();
  call(route(k.tag), id, k.tag, std::move(cmd), true, [this, done = std::move(done)](Result<Reply> r) mutable {
    done(std::move(r));
    end_op();
  });
}

}  // namespace parley::store::valkey
