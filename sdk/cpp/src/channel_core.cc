#include "channel_core.h"

#include <algorithm>

#include "client_core.h"
#include "fields.h"

namespace parley::detail {
namespace {

Error error_from(const Json& obj) {
  return Error{str_or(obj, "code", "internal"), str_or(obj, "msg"), int_or(obj, "retry_ms", -1)};
}

}  // namespace

bool to_message(Json& obj, const std::string& ch, Message& out) {
  int64_t seq = 0;
  if (!get_int(obj, "seq", seq) || seq < 1) return false;
  const std::string* op = str_ptr(obj, "op");
  if (op && (*op == "edit" || *op == "delete")) {
    // An entry changing another message: without a target it says nothing.
    if (!get_int(obj, "target", out.target) || out.target < 1 || out.target >= seq) return false;
    out.kind = *op == "edit" ? EntryKind::edit : EntryKind::deletion;
  } else {
    out.kind = EntryKind::msg;
    out.target = 0;
    out.edited = int_or(obj, "edited", -1);
    out.deleted = bool_or(obj, "deleted", false);
  }
  out.ch = ch;
  out.seq = seq;
  out.from = str_or(obj, "from");
  out.id = str_or(obj, "id");
  out.ts = int_or(obj, "ts", 0);
  out.body = take(obj, "body");
  return true;
}

ChannelCore::ChannelCore(ClientCore& client, std::string name) : client_(client), name_(std::move(name)) {}

// ---- joining ----

void ChannelCore::join(std::function<void(const Result<Joined>&)> done, std::optional<int64_t> since) {
  if (client_.is_closed()) {
    if (done) client_.emit([done] { done(Error{"closed", "client is closed"}); });
    return;
  }
  if (since) {
    if (*since < 0) {
      if (done) client_.emit([done] { done(Error{"bad_request", "since must be a non-negative integer"}); });
      return;
    }
    last_seq_ = *since;
  }
  want_ = true;
  if (done) join_waiters_.push_back(std::move(done));
  if (status_ == Status::joined && !since) {
    settle_join(Joined{name_, last_seq_, true, 1, members()});
  } else if (status_ != Status::joining && client_.is_open()) {
    send_join();
  }
  if (client_.state() == ClientState::idle) client_.connect();
}

void ChannelCore::leave() {
  const bool was_member = status_ != Status::idle;
  want_ = false;
  status_ = Status::idle;
  join_gen_++;
  repair_gen_++;
  repairing_ = false;
  fail_everything(Error{"left", "left " + name_});
  client_.forget_streams(name_);
  ups_.clear();
  buffer_.clear();
  dropped_high_ = -1;
  failed_pages_ = 0;
  if (was_member && client_.is_open()) {
    client_.request({{"op", "leave"}, {"ch", name_}}, false, [](Result<Json>) {});
  }
}

void ChannelCore::send_join() {
  status_ = Status::joining;
  client_.forget_streams(name_);  // a (re-)join's states come as full bodies
  const uint64_t gen = ++join_gen_;
  Json frame = {{"op", "join"}, {"ch", name_}};
  if (last_seq_ >= 0) frame["since"] = last_seq_;
  auto call = std::make_shared<Call>();
  call->frame = std::move(frame);
  call->retry = false;  // a drop ends this attempt; on_open rejoins
  call->on_reply = [this, gen](Json& obj) {
    if (gen == join_gen_) on_joined_reply(obj);
  };
  call->on_error = [this, gen](const Json& obj) {
    if (gen != join_gen_) return;
    const std::string code = str_or(obj, "code");
    if (Error::is_retryable(code)) {
      client_.emit_retry(Retry{"join", name_, {}, code, int_or(obj, "retry_ms", -1)});
      client_.later(client_.retry_delay(obj), [this, gen] {
        if (gen == join_gen_ && want_ && client_.is_open()) send_join();
      });
      return;
    }
    // forbidden, quota_exceeded, bad_request: joining again will not help.
    const Error err = error_from(obj);
    want_ = false;
    status_ = Status::idle;
    fail_everything(err);
    client_.emit([this, err] {
      if (on_error) on_error(err);
    });
  };
  call->fail = [this](const Error& err) {
    if (err.code != "closed") return;
    auto waiters = std::move(join_waiters_);
    join_waiters_.clear();
    for (auto& w : waiters) client_.emit([w, err] { w(err); });
  };
  client_.submit(call);
}

void ChannelCore::on_joined_reply(Json& obj) {
  if (!want_) return;
  status_ = Status::joined;
  const int64_t seq = std::max<int64_t>(0, int_or(obj, "seq", 0));
  const int64_t prev = last_seq_;
  if (prev < 0) {
    last_seq_ = seq;
  } else if (seq < prev) {
    // The channel's log is behind what was delivered (a non-durable namespace
    // after a server restart): its seqs start over.
    buffer_.clear();
    dropped_high_ = -1;
    failed_pages_ = 0;
    repair_gen_++;
    repairing_ = false;
    last_seq_ = seq;
    client_.emit([this, r = Reset{name_, prev, seq}] {
      if (on_reset) on_reset(r);
    });
  }
  if (field(obj, "members")) replace_members(strings(obj, "members"));
  Joined info{name_, seq, bool_or(obj, "recovered", false), std::max<int64_t>(1, int_or(obj, "epoch", 1)),
              members()};
  client_.emit([this, info] {
    if (on_joined) on_joined(info);
  });
  settle_join(info);
  pump();
  for (auto& [key, s] : states_) {
    if (s.has_body) s.dirty = true;
  }
  std::vector<std::string> keys;
  for (auto& [key, s] : states_) keys.push_back(key);
  for (auto& key : keys) flush_state(key);
  auto ups = std::move(ups_);
  ups_.clear();
  for (auto& body : ups) send_up(std::move(body));
}

// After a rejoin the member list is the server's again; what changed while
// disconnected is reported as one presence event, minus this user.
void ChannelCore::replace_members(const std::vector<std::string>& list) {
  std::set<std::string> next(list.begin(), list.end());
  const std::string& self = client_.user();
  Presence p{name_, {}, {}};
  for (auto& u : next) {
    if (!members_.count(u) && u != self) p.join.push_back(u);
  }
  for (auto& u : members_) {
    if (!next.count(u) && u != self) p.leave.push_back(u);
  }
  const bool had_list = !members_.empty();
  members_ = std::move(next);
  if (had_list && (!p.join.empty() || !p.leave.empty())) {
    client_.emit([this, p] {
      if (on_presence) on_presence(p);
    });
  }
}

void ChannelCore::settle_join(const Result<Joined>& r) {
  auto waiters = std::move(join_waiters_);
  join_waiters_.clear();
  for (auto& w : waiters) client_.emit([w, r] { w(r); });
}

void ChannelCore::fail_everything(const Error& err) {
  settle_join(err);
  auto pubs = std::move(publishes_);
  publishes_.clear();
  for (auto& p : pubs) settle(p, err);
  clear_states();
}

// ---- driven by the client ----

void ChannelCore::on_open() {
  if (want_) send_join();
}

void ChannelCore::on_drop() {
  status_ = Status::idle;
  join_gen_++;
  for (auto& [key, s] : states_) {
    client_.cancel(s.timer);
    s.timer = 0;
  }
}

void ChannelCore::on_client_closed(const Error& err) {
  want_ = false;
  status_ = Status::idle;
  repair_gen_++;
  repairing_ = false;
  fail_everything(err);
}

void ChannelCore::on_event(Json& obj) {
  if (status_ != Status::joined) return;
  const std::string& op = *str_ptr(obj, "op");
  // Edits and deletes are entries of the log: in the same seq stream.
  if (op == "msg" || op == "edit" || op == "delete") return on_msg_frame(obj);
  if (op == "state") {
    State s{name_, str_or(obj, "from"), str_or(obj, "key"), take(obj, "body"), take(obj, "pos")};
    s.tick = int_or(obj, "tick", -1);
    s.ts = int_or(obj, "ts", -1);
    s.sid = int_or(obj, "sid", 0);
    client_.emit([this, s = std::move(s)] {
      if (on_state) on_state(s);
    });
    return;
  }
  if (op == "presence") {
    Presence p{name_, strings(obj, "join"), strings(obj, "leave")};
    for (auto& u : p.join) members_.insert(u);
    for (auto& u : p.leave) members_.erase(u);
    client_.emit([this, p = std::move(p)] {
      if (on_presence) on_presence(p);
    });
  }
}

// PROTOCOL.md "Moderation: mute, kick, ban": the server removed this
// connection from the channel. No rejoin (a moderator's decision, maybe a ban
// behind it): what waits on the channel fails with `kicked`, on_kicked says
// why. A `joined` of a join in flight comes after it and is ignored (join_gen_).
void ChannelCore::on_kicked_frame(const Json& obj) {
  if (!want_ && status_ == Status::idle) return;
  Kicked k{name_, str_or(obj, "reason")};
  want_ = false;
  status_ = Status::idle;
  join_gen_++;
  repair_gen_++;
  repairing_ = false;
  fail_everything(Error{"kicked", k.reason.empty() ? "kicked from " + name_ : k.reason});
  client_.forget_streams(name_);
  ups_.clear();
  buffer_.clear();
  dropped_high_ = -1;
  failed_pages_ = 0;
  client_.emit([this, k = std::move(k)] {
    if (on_kicked) on_kicked(k);
  });
}

void ChannelCore::on_delta_state(State s) {
  if (status_ != Status::joined) return;
  client_.emit([this, s = std::move(s)] {
    if (on_state) on_state(s);
  });
}

// The join asks `since` the last seq delivered, so no msg is lost; events
// between the leave and the `joined` are dropped (joining) and come back with it.
void ChannelCore::resync() {
  if (status_ != Status::joined || !client_.is_open()) return;
  client_.request({{"op", "leave"}, {"ch", name_}}, false, [](Result<Json>) {});
  send_join();
}

bool ChannelCore::on_fire_and_forget_error(const Json& obj) {
  const int64_t rid = rid_of(obj);
  const std::string code = str_or(obj, "code");
  std::string key;
  if (state_rids_.take(rid, key)) {
    auto it = states_.find(key);
    if (it != states_.end() && Error::is_retryable(code)) {
      it->second.dirty = true;  // the newest body goes out once the limit allows
      it->second.hold_until = client_.now() + client_.retry_delay(obj);
      client_.emit_retry(Retry{"state", name_, {}, code, int_or(obj, "retry_ms", -1)});
      flush_state(key);
    } else {
      client_.emit([this, e = error_from(obj)] {
        if (on_error) on_error(e);
      });
    }
    return true;
  }
  Json body;
  if (up_rids_.take(rid, body)) {
    if (Error::is_retryable(code)) {
      client_.emit_retry(Retry{"up", name_, {}, code, int_or(obj, "retry_ms", -1)});
      client_.later(client_.retry_delay(obj), [this, body = std::move(body)]() mutable {
        if (want_) up(std::move(body));
      });
    } else {
      client_.emit([this, e = error_from(obj)] {
        if (on_error) on_error(e);
      });
    }
    return true;
  }
  return false;
}

// ---- messages in seq order ----

void ChannelCore::on_msg_frame(Json& obj) {
  Message m;
  if (!to_message(obj, name_, m)) return;
  if (repairing_) return hold(std::move(m));
  if (m.seq <= last_seq_) return;  // delivered before (a resume resends)
  if (m.seq == last_seq_ + 1) return deliver(m);
  hold(std::move(m));
  repair_step();
}

void ChannelCore::deliver(Message& m) {
  last_seq_ = m.seq;
  client_.emit([this, m = std::move(m)] {
    auto& fn = m.kind == EntryKind::edit ? on_edit : m.kind == EntryKind::deletion ? on_delete : on_msg;
    if (fn) fn(m);
  });
}

void ChannelCore::hold(Message m) {
  if (m.seq <= last_seq_) return;
  const int64_t seq = m.seq;
  buffer_.emplace(seq, std::move(m));
  // Over the cap the newest goes and the repair reads it from history once
  // what is held is delivered (dropped_high_), where dropping the oldest
  // would report seqs history still has as a gap.
  if (buffer_.size() > std::max<std::size_t>(1, client_.options().max_repair_buffer)) {
    auto newest = std::prev(buffer_.end());
    dropped_high_ = std::max(dropped_high_, newest->first);
    buffer_.erase(newest);
  }
}

// The first seq past the hole being filled: the oldest held, or past the
// newest dropped once nothing is held; last_seq_ + 1 when there is no hole.
int64_t ChannelCore::repair_bound() const {
  if (!buffer_.empty()) return buffer_.begin()->first;
  return std::max(last_seq_, dropped_high_) + 1;
}

// Fills the hole between the last delivered seq and the first held message
// from history; what history no longer has is reported as a `gap`.
void ChannelCore::repair_step() {
  repairing_ = true;
  for (;;) {
    while (!buffer_.empty() && buffer_.begin()->first <= last_seq_) buffer_.erase(buffer_.begin());
    while (!buffer_.empty() && buffer_.begin()->first == last_seq_ + 1) {
      Message m = std::move(buffer_.begin()->second);
      buffer_.erase(buffer_.begin());
      deliver(m);
    }
    if (repair_bound() == last_seq_ + 1 || !want_) {
      repairing_ = false;
      dropped_high_ = -1;
      failed_pages_ = 0;
      return;
    }
    break;
  }
  const int64_t first = repair_bound();
  HistoryQuery q;
  q.after = last_seq_;
  q.limit = std::min(kHistoryPage, first - last_seq_ - 1);
  const uint64_t gen = repair_gen_;
  history(q, [this, gen](Result<std::vector<Message>> page) { on_repair_page(std::move(page), gen); });
}

void ChannelCore::on_repair_page(Result<std::vector<Message>> page, uint64_t gen) {
  if (gen != repair_gen_ || !repairing_) return;
  if (!page.ok() && (page.error().code == "closed" || page.error().code == "left")) {
    repairing_ = false;
    return;
  }
  if (!want_) {
    repairing_ = false;
    return;
  }
  if (!page.ok() && ++failed_pages_ < kMaxFailedPages) {
    // A read that failed (timed out, refused) is not history's answer: what
    // it asked for may still be there. Asked again; a gap only after
    // kMaxFailedPages failures in a row.
    client_.later(client_.retry_delay(Json::object()), [this, gen] {
      if (gen == repair_gen_ && repairing_ && want_) repair_step();
    });
    return;
  }
  failed_pages_ = 0;
  // Only what neither the page nor what is held covers is a gap: the page
  // may start late (history trimmed), may reach past the first held seq, and
  // what is held may have gained earlier seqs while the page was read (a
  // resume after a reconnect).
  std::vector<Message> msgs;
  if (page.ok()) msgs = std::move(page.value());
  // Only what is past what was delivered: a page of seqs already delivered is
  // history having nothing after ours (asking again would loop).
  msgs.erase(std::remove_if(msgs.begin(), msgs.end(), [this](const Message& m) { return m.seq <= last_seq_; }),
             msgs.end());
  const int64_t oldest = msgs.empty() ? INT64_MAX : msgs.front().seq;
  const int64_t next = last_seq_ + 1;
  const int64_t to = std::min(oldest, repair_bound()) - 1;
  if (to >= next) {
    // History answered from a later seq, or with nothing after ours.
    client_.emit([this, g = Gap{name_, next, to}] {
      if (on_gap) on_gap(g);
    });
    last_seq_ = to;
  }
  // The page in order: what continues the stream is delivered at once (with
  // what is held behind it), so a page is never cut down to the buffer's
  // size; only what lies past a hole is held.
  for (auto& h : msgs) {
    while (!buffer_.empty() && buffer_.begin()->first <= last_seq_) buffer_.erase(buffer_.begin());
    if (h.seq == last_seq_ + 1) {
      deliver(h);
      while (!buffer_.empty() && buffer_.begin()->first == last_seq_ + 1) {
        Message m = std::move(buffer_.begin()->second);
        buffer_.erase(buffer_.begin());
        deliver(m);
      }
    } else {
      hold(std::move(h));
    }
  }
  repair_step();
}

void ChannelCore::history(const HistoryQuery& q, std::function<void(Result<std::vector<Message>>)> done) {
  Json frame = {{"op", "history"}, {"ch", name_}};
  if (q.after) frame["after"] = *q.after;
  if (q.before) frame["before"] = *q.before;
  if (q.limit) frame["limit"] = *q.limit;
  // Runs from within the request's own (already deferred) completion.
  client_.request(std::move(frame), true, [this, done = std::move(done)](Result<Json> r) {
    if (!r.ok()) return done(r.error());
    std::vector<Message> msgs;
    Json* list = r.value().is_object() ? &r.value()["msgs"] : nullptr;
    if (list && list->is_array()) {
      msgs.reserve(list->size());
      for (Json& obj : *list) {
        Message m;
        if (to_message(obj, name_, m)) msgs.push_back(std::move(m));
      }
    }
    std::sort(msgs.begin(), msgs.end(), [](const Message& a, const Message& b) { return a.seq < b.seq; });
    done(std::move(msgs));
  });
}

void ChannelCore::moderate(const char* op, int64_t target, Json body,
                           std::function<void(const Result<Moderated>&)> done) {
  auto finish = [this, done = std::move(done)](Result<Moderated> r) {
    if (done) client_.emit([done, r = std::move(r)] { done(r); });
  };
  if (target < 1) return finish(Error{"bad_request", "target must be a seq (an integer >= 1)"});
  if (client_.is_closed()) return finish(Error{"closed", "client is closed"});
  Json frame = {{"op", op}, {"ch", name_}, {"target", target}};
  if (std::string_view(op) == "edit") frame["body"] = std::move(body);
  if (client_.state() == ClientState::idle) client_.connect();
  // Runs from within the request's own (already deferred) completion.
  client_.request(std::move(frame), true, [this, finish = std::move(finish)](Result<Json> r) {
    if (!r.ok()) return finish(r.error());
    int64_t seq = 0;
    int64_t target = 0;
    if (!get_int(r.value(), "seq", seq) || seq < 1 || !get_int(r.value(), "target", target)) {
      return finish(Error{"bad_frame", "an edited / deleted reply without an integer seq and target"});
    }
    finish(Moderated{name_, seq, target});
  });
}

// ---- publishing ----

std::string ChannelCore::publish(Json body, std::function<void(const Result<Ack>&)> done, std::string id) {
  auto p = std::make_shared<Publish>();
  p->id = id.empty() ? client_.next_id() : std::move(id);
  p->body = std::move(body);
  p->done = std::move(done);
  if (client_.is_closed()) {
    settle(p, Error{"closed", "client is closed"});
    return p->id;
  }
  if (!want_) {
    settle(p, Error{"forbidden", "join the channel first"});
    return p->id;
  }
  if (publishes_.size() >= client_.options().max_queued_publishes) {
    settle(p, Error{"queue_full", "too many publishes waiting on " + name_});
    return p->id;
  }
  const int64_t timeout = client_.options().publish_timeout_ms;
  if (timeout > 0) {
    std::weak_ptr<Publish> weak = p;
    p->timer = client_.later(timeout, [this, weak, timeout] {
      auto e = weak.lock();
      if (!e) return;
      settle(e, Error{"timeout", "publish " + e->id + " not acknowledged within " + std::to_string(timeout) + " ms"});
      pump();
    });
  }
  publishes_.push_back(p);
  pump();
  return p->id;
}

void ChannelCore::pump() {
  if (status_ != Status::joined || !client_.is_open()) return;
  const int window = client_.options().max_in_flight;
  int busy = 0;
  for (auto& e : publishes_) {
    if (e->state == PubState::inflight || e->state == PubState::waiting) busy++;
  }
  for (auto& e : publishes_) {
    if (busy >= window) break;
    if (e->state != PubState::queued) continue;
    e->state = PubState::inflight;
    e->attempts++;
    busy++;
    auto call = std::make_shared<Call>();
    call->frame = {{"op", "pub"}, {"ch", name_}, {"id", e->id}, {"body", e->body}};
    call->retry = false;
    PublishPtr p = e;
    call->on_reply = [this, p](Json& ack) {
      settle(p, Ack{p->id, int_or(ack, "seq", 0), bool_or(ack, "dup", false)});
      pump();
    };
    call->on_error = [this, p](const Json& obj) { on_publish_error(p, obj); };
    call->fail = [this, p](const Error& err) {
      if (p->state == PubState::done) return;
      if (err.code == "closed") return settle(p, err);
      p->state = PubState::queued;  // dropped in flight: resent, same id, after the rejoin
    };
    client_.submit(call);
  }
}

void ChannelCore::on_publish_error(const PublishPtr& p, const Json& obj) {
  if (p->state == PubState::done) return;
  const std::string code = str_or(obj, "code");
  if (Error::is_retryable(code) && p->attempts < client_.options().max_retry_attempts) {
    p->state = PubState::waiting;
    client_.emit_retry(Retry{"pub", name_, p->id, code, int_or(obj, "retry_ms", -1)});
    client_.later(client_.retry_delay(obj), [this, p] {
      if (p->state != PubState::waiting) return;
      p->state = PubState::queued;
      pump();
    });
    return;
  }
  settle(p, error_from(obj));
  pump();
}

void ChannelCore::settle(const PublishPtr& p, const Result<Ack>& r) {
  if (p->state == PubState::done) return;
  p->state = PubState::done;
  client_.cancel(p->timer);
  publishes_.remove(p);
  if (p->done) client_.emit([done = std::move(p->done), r] { done(r); });
}

// ---- state and up ----

void ChannelCore::set_state(const std::string& key, Json body) {
  StateSlot& s = states_[key];
  s.body = std::move(body);
  s.has_body = true;
  s.dirty = true;
  flush_state(key);
}

void ChannelCore::clear_state(const std::string& key) {
  auto it = states_.find(key);
  if (it == states_.end()) return;
  client_.cancel(it->second.timer);
  states_.erase(it);
}

void ChannelCore::flush_state(const std::string& key) {
  auto it = states_.find(key);
  if (it == states_.end()) return;
  StateSlot& s = it->second;
  if (!s.dirty || s.timer) return;
  if (status_ != Status::joined || !client_.is_open()) return;  // sent after the rejoin
  const int64_t now = client_.now();
  const int64_t at = std::max(s.last_sent + client_.options().state_min_interval_ms, s.hold_until);
  if (at > now) {
    s.timer = client_.later(at - now, [this, key] {
      auto it2 = states_.find(key);
      if (it2 == states_.end()) return;
      it2->second.timer = 0;
      flush_state(key);
    });
    return;
  }
  const int64_t rid = client_.take_rid();
  if (client_.send_frame({{"op", "state"}, {"ch", name_}, {"key", key}, {"body", s.body}, {"rid", rid}})) {
    state_rids_.remember(rid, key);
    s.dirty = false;
    s.last_sent = now;
  }
}

void ChannelCore::clear_states() {
  for (auto& [key, s] : states_) client_.cancel(s.timer);
  states_.clear();
  state_rids_.clear();
}

void ChannelCore::up(Json body) {
  if (!want_) {
    client_.emit([this] {
      if (on_error) on_error(Error{"forbidden", "join the channel first"});
    });
    return;
  }
  if (joined() && client_.is_open()) return send_up(std::move(body));
  ups_.push_back(std::move(body));
  if (ups_.size() > kMaxUpQueue) {
    ups_.pop_front();
    client_.emit([this] {
      if (on_error) on_error(Error{"queue_full", "up queue full: the oldest was dropped"});
    });
  }
}

void ChannelCore::send_up(Json body) {
  const int64_t rid = client_.take_rid();
  if (client_.send_frame({{"op", "up"}, {"ch", name_}, {"body", body}, {"rid", rid}})) {
    up_rids_.remember(rid, std::move(body));
  } else {
    ups_.push_back(std::move(body));
  }
}

}  // namespace parley::detail
