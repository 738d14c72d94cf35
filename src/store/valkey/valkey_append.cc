// An append: the script call, WAIT behind it with wait_replicas, the commit's
// publication, and completions handed out in submission order (valkey_store.h).
#include "store/valkey/valkey_store.h"

#include <mutex>

#include <hiredis/hiredis.h>

#include "common/clock.h"
#include "store/store_policy.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"
#include "store/valkey/scripts.h"

namespace parley::store::valkey {

void ValkeyStore::complete_in_order(const std::string& key, uint64_t ticket, std::function<void()> fire) {
  std::unique_lock lock(route_mu_);
  Sticky& st = sticky_.find(key)->second;  // a reference survives other inserts
  st.ready.emplace(ticket, std::move(fire));
  if (st.delivering) return;  // the thread handing out will find it
  st.delivering = true;
  std::vector<std::function<void()>> batch;
  for (;;) {
    for (auto r = st.ready.begin(); r != st.ready.end() && r->first == st.next_done;
         r = st.ready.erase(r)) {
      batch.push_back(std::move(r->second));
      ++st.next_done;
    }
    if (batch.empty()) break;
    // Outside the lock: a completion may append again (to this channel too).
    lock.unlock();
    for (auto& f : batch) f();
    batch.clear();
    lock.lock();
  }
  st.delivering = false;
  // By key: another channel's insert may have rehashed the map meanwhile.
  if (st.next_done == st.next_ticket) sticky_.erase(key);
}

void ValkeyStore::append(AppendRequest req, AppendDone done) {
  if (closed_.load()) return done(AppendOutcome{closed_error()});
  const ChannelKeys k = channel_keys(req.key, opts_.partitions);
  const StoredMessage& m = req.msg;
  appends_.fetch_add(1, std::memory_order_relaxed);
  begin_op();
  NodePool* pool;
  std::string sticky_key;
  uint64_t ticket = 0;
  uint64_t seen = 0;
  // The script publishes the commit itself (atomically: no node's crash can lose
  // the push), unless an ack waits for replicas: then this node publishes once
  // WAIT confirmed it, so no member gets what was not acknowledged. The hub's own
  // seqs (one node) are not published: nobody listens.
  std::string script_feed;
  {
    std::lock_guard lock(route_mu_);
    if (opts_.cluster) {
      // A channel's appends in flight start on one connection, whatever moves.
      sticky_key = req.key.key();
      Sticky& st = sticky_[sticky_key];
      if (st.next_ticket == st.next_done) st.pool = route_locked(k.tag);
      ticket = st.next_ticket++;
      pool = st.pool;
    } else {
      pool = route_locked(k.tag);
    }
    if (m.seq == 0 && opts_.wait_replicas == 0) script_feed = feed_name(k.feed, pool);
  }
  if (m.seq == 0) seen = followed_.seen(req.key);
  const bool waits = opts_.wait_replicas > 0 && pool;
  std::vector<std::string> args{
      "EVALSHA", append_script().sha1, "6", k.seq, k.history, k.dedupe, k.dedupe_by_time, k.wal, k.epoch,
      std::to_string(m.seq), std::to_string(m.ts_ms), m.from, m.id, m.body,
      std::to_string(history_keep(req.history_limit)), std::to_string(history_slack(req.history_limit)),
      std::to_string(uint64_t{req.dedupe_window_s} * 1000), req.key.channel,
      std::to_string(opts_.wal_max_len), script_feed, std::to_string(seen), waits ? "1" : ""};
  if (m.kind != EntryKind::kMsg && req.amended) {
    // A moderation event: its kind, target and the target's new version, and
    // the channel's amendment zset as a seventh key (scripts.h).
    args[2] = "7";
    args.insert(args.begin() + 9, k.amends);
    args.push_back(m.kind == EntryKind::kEdit ? "e" : "d");
    args.push_back(std::to_string(m.target));
    args.push_back(amendment_value(*req.amended));
  }
  std::string cmd = format_command(args);
  const int64_t start = steady_ns();
  // Sent again only with the hub's seq: the script refuses it out of turn, so a
  // resend can never put two appends of a channel in the other order.
  const bool resend = m.seq != 0;
  // The script's answer and, with wait_replicas, WAIT's: one WAIT per loop turn
  // of the connection, behind every append sent on it in that turn
  // (RespConnection::join_barrier; WAIT covers every write the connection sent
  // before it). WAIT goes with the script on the channel's connection; when the
  // script was sent again (MOVED, ASK: another node ran it; TRYAGAIN: it ran after
  // that WAIT), the connection that answered sends a WAIT of its own and only that
  // answer counts. The answers come on the loops of those connections, so
  // Pending is shared under its mutex.
  struct Pending {
    std::mutex mu;
    int left = 1;
    bool redirected = false;  // the first WAIT's answer does not count
    Result<Reply> script = Error{ErrorCode::kUnavailable, "no answer", 1000};
    int64_t replicas = -1;  // WAIT's answer; -1: none (failed, or not a number)
  };
  auto replicas_of = [](const Result<Reply>& r) -> int64_t {
    return r && r.value()->type == REDIS_REPLY_INTEGER ? r.value()->integer : -1;
  };
  auto p = std::make_shared<Pending>();
  if (waits) p->left = 2;
  // With wait_replicas: published by this node once WAIT confirmed the append.
  std::string publish = m.seq == 0 && waits ? k.feed : std::string();
  auto finish = [this, p, start, ticket, seq0 = m.seq == 0, sticky_key = std::move(sticky_key),
                 publish = std::move(publish), key = req.key, msg = req.msg, done = std::move(done)]() mutable {
    AppendOutcome out = parse_append(p->script);
    // A duplicate waits for WAIT too: its original may be as unreplicated as a
    // fresh write (its own ack failed WAIT, and this is the client's retry); the
    // script made this call a write, so WAIT covers the original.
    if (out && opts_.wait_replicas > 0 && p->replicas < opts_.wait_replicas) {
      // Written on the master, not (yet) on enough replicas: not acknowledged.
      // A retry with the same id answers its seq as a duplicate if it survives.
      out = AppendOutcome{Error{ErrorCode::kUnavailable,
                                "store unavailable: fewer than " + std::to_string(opts_.wait_replicas) +
                                    " replicas confirmed the write",
                                1000}};
      wait_short_.fetch_add(1, std::memory_order_relaxed);
    }
    const ChannelKeys k = channel_keys(key, opts_.partitions);
    if (out && seq0) followed_.note_seen(key, out->seq, out->epoch, false);
    if (out && !out->dup && !publish.empty()) {
      msg.seq = out->seq;
      msg.epoch = out->epoch;
      NodePool* to = route(k.tag);
      std::string name;
      {
        std::lock_guard lock(route_mu_);
        name = feed_name(publish, to);
      }
      begin_op();
      call(to, key, k.tag, format_command({"SPUBLISH", name, format_commit(key.channel, msg)}), true,
           [this](Result<Reply>) { end_op(); });
    }
    auto fire = [this, out = std::move(out), done = std::move(done)]() mutable {
      appends_.fetch_sub(1, std::memory_order_relaxed);
      done(std::move(out));
      end_op();
    };
    if (sticky_key.empty()) return fire();
    complete_in_order(sticky_key, ticket, std::move(fire));
  };
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  // Each answer is recorded under Pending's lock; the last one finishes the append.
  auto settle = [p, shared_finish](auto record) {
    bool last;
    {
      std::lock_guard lock(p->mu);
      record(*p);
      last = --p->left == 0;
    }
    if (last) (*shared_finish)();
  };
  ValkeyStore::Redirected redirected;
  if (waits) {
    redirected = [this, p, settle, replicas_of](RespConnection& answered) {
      {
        std::lock_guard lock(p->mu);
        p->redirected = true;
        p->replicas = -1;
        ++p->left;  // this WAIT's answer
      }
      answered.join_barrier(wait_command_, [settle, replicas_of](const Result<Reply>& r) {
        settle([&](Pending& q) { q.replicas = replicas_of(r); });
      });
    };
  }
  call(
      pool, req.key, k.tag, std::move(cmd), resend,
      [this, start, settle](Result<Reply> r) mutable {
        if (r && observe_) observe_(steady_ns() - start);
        settle([&](Pending& q) { q.script = std::move(r); });
      },
      std::move(redirected));
  if (waits) {
    // The connection the script went to first (call() picks it by the same hash).
    pool->run(std::hash<std::string>{}(req.key.key()), [this, settle, replicas_of](RespConnection& conn) {
      conn.join_barrier(wait_command_, [settle, replicas_of](const Result<Reply>& r) {
        settle([&](Pending& q) {
          if (!q.redirected) q.replicas = replicas_of(r);
        });
      });
    });
  }
}

}  // namespace parley::store::valkey
