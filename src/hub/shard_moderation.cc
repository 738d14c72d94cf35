// The Shard's moderation part (PROTOCOL.md "Moderation: delete and edit"): an
// edit or delete of a message is a log entry of its own, sequenced like a pub
// (so seqs stay gap-free and a resume replays it), whose append also rewrites
// the message's stored record to its current version (history reads it).
//
// A channel runs one moderation op at a time: the op reads its target from the
// store, checks who may change it, then appends; the next op starts once that
// append is answered, so its read sees the change (a delete is final: an edit
// queued behind it finds a tombstone). Several nodes (valkey): the store's
// script keeps a delete final against another node's edit. Same class, same
// thread as shard.cc: every method runs on the shard's loop.
#include "common/check.h"
#include "common/clock.h"
#include "hub/shard.h"
#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "runtime/loop_group.h"

namespace parley::hub {

namespace {
// Ops of one channel waiting behind the one in progress before `backpressure`.
constexpr size_t kMaxModerationQueue = 64;
}  // namespace

void Shard::moderate(ModerateRequest req) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  if (Channel* ready = find(req.tenant, req.ch)) return moderate_loaded(ready, std::move(req));
  std::string ch = req.ch;
  const TenantConfig* tenant = req.tenant;
  with_channel(tenant, ch, [this, req = std::move(req)](Channel* c, const Error* err) mutable {
    if (c) return moderate_loaded(c, std::move(req));
    to_loop(req.reply_loop, [done = std::move(req.done), out = store::AppendOutcome{*err}]() mutable {
      done(std::move(out));
    });
  });
}

void Shard::moderate_loaded(Channel* c, ModerateRequest req) {
  if (c->moderating) {
    if (c->moderation_queue.size() >= kMaxModerationQueue) {
      return answer_moderation(req, Error{ErrorCode::kBackpressure, "too many edits and deletes in flight",
                                          opts_.backpressure_retry_ms});
    }
    c->moderation_queue.push_back(std::move(req));
    return;
  }
  c->moderating = true;
  moderation_step(c, std::move(req));
}

void Shard::moderation_step(Channel* c, ModerateRequest req) {
  auto refuse = [&](Error e) {
    answer_moderation(req, std::move(e));
    moderation_next(c);
  };
  if (!c->log.ready()) return refuse(Error{ErrorCode::kUnavailable, "store unavailable", 1000});
  // Only what was acknowledged can be changed.
  if (req.target > c->log.committed()) return refuse(Error{ErrorCode::kNotFound, "no message with that seq"});
  const uint64_t target = req.target;
  c->store->read_after(c->id, target - 1, 1, [this, c, req = std::move(req)](auto r) mutable {
    loops_.run_on(index_, [this, c, req = std::move(req), r = std::move(r)]() mutable {
      on_moderation_target(c, std::move(req), std::move(r));
    });
  });
}

void Shard::on_moderation_target(Channel* c, ModerateRequest req,
                                 Result<std::vector<store::StoredMessage>> read) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto refuse = [&](Error e) {
    answer_moderation(req, std::move(e));
    moderation_next(c);
  };
  if (!read || !c->log.ready()) return refuse(Error{ErrorCode::kUnavailable, "store unavailable", 1000});
  if (read->empty() || read->front().seq != req.target || read->front().kind != store::EntryKind::kMsg) {
    // Trimmed by retention, or the seq of an edit or delete: no message there.
    return refuse(Error{ErrorCode::kNotFound, "no message with that seq"});
  }
  store::StoredMessage msg = std::move(read->front());
  if (msg.deleted) return refuse(Error{ErrorCode::kNotFound, "message was deleted"});
  const int64_t now_ms = wall_ms();
  if (req.conn != 0 && !req.moderator) {
    if (msg.from != req.from) return refuse(Error{ErrorCode::kForbidden, "not your message"});
    // The live config: a reload that changes the window applies to the next op.
    const auto& ns = req.tenant->ns(protocol::channel_namespace(req.ch));
    if (ns.edit_window_s == 0 || now_ms - msg.ts_ms > int64_t{ns.edit_window_s} * 1000) {
      return refuse(Error{ErrorCode::kForbidden, "the edit window of this message has passed"});
    }
  }
  if (inflight() >= opts_.append_queue_limit) {
    return refuse(Error{ErrorCode::kBackpressure, "append queue full", opts_.backpressure_retry_ms});
  }
  // The target's new current version: same seq, sender, id and time.
  store::StoredMessage amended = msg;
  amended.epoch = 0;
  if (req.edit) {
    amended.body = req.body;
    amended.edited_ms = now_ms;
  } else {
    amended.body = "null";
    amended.deleted = true;
  }
  store::StoredMessage event{0, now_ms, std::move(req.from), {}, req.edit ? std::move(req.body) : "null"};
  event.kind = req.edit ? store::EntryKind::kEdit : store::EntryKind::kDelete;
  event.target = req.target;
  Channel::Pending pending{nullptr, req.arrived_ns, steady_ns(), req.reply_loop, std::move(req.done),
                           nullptr, {}, nullptr};
  pending.moderation = true;
  // Upstream, as a pub's `msg` once written (its seq set then where the store
  // numbers); the HTTP API's own (conn 0) are not echoed, as its publishes.
  if (upstream_ && req.conn != 0 && c->ns->forwards(req.edit ? kForwardEdit : kForwardDelete)) {
    pending.upstream = std::make_unique<UpstreamEvent>(UpstreamEvent{
        req.edit ? UpstreamEventType::kEdit : UpstreamEventType::kDelete, req.tenant, c->ns, req.ch,
        event.from, req.conn, now_ms, 0, {}, {}, req.edit ? event.body : std::string(), req.target});
  }
  if (c->log.store_numbers()) {
    return append_unnumbered(c, std::move(event), std::move(pending), std::move(amended));
  }
  event.seq = c->log.next_seq();
  if (pending.upstream) pending.upstream->seq = event.seq;
  auto json = std::make_shared<std::string>();
  protocol::encode_msg(*json, entry_view(req.ch, event));
  pending.msg_json = std::move(json);
  append_numbered(c, {}, std::move(event), std::move(pending), std::move(amended));
}

void Shard::answer_moderation(ModerateRequest& req, store::AppendOutcome out) {
  to_loop(req.reply_loop, [done = std::move(req.done), out = std::move(out)]() mutable {
    done(std::move(out));
  });
}

void Shard::moderation_next(Channel* c) {
  if (c->moderation_queue.empty()) {
    c->moderating = false;
    if (c->members.empty()) c->idle_since_ms = wall_ms();
    return;
  }
  ModerateRequest next = std::move(c->moderation_queue.front());
  c->moderation_queue.pop_front();
  moderation_step(c, std::move(next));
}

}  // namespace parley::hub
