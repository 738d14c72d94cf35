#include "session/client_session.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/clock.h"
#include "events/board_channel.h"
#include "hub/history.h"
#include "session/gateway.h"
#include "session/moderation.h"
#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "protocol/identifier.h"
#include "protocol/msgpack_decoder.h"
#include "protocol/version.h"

namespace parley::session {

namespace {
// `history` flow control (docs/protocol-notes.md): one request in flight per
// connection, this many queued behind it, then `backpressure`.
constexpr size_t kMaxQueuedHistory = 16;
constexpr int kHistoryRetryMs = 100;
// Frames a connection may send while a hook's verdict is awaited (PROTOCOL.md
// "Hooks"), and the body bytes they may hold; past either, `backpressure`.
constexpr size_t kMaxHeldOps = 64;
constexpr size_t kMaxHeldBytes = 1 << 20;
constexpr int kHeldRetryMs = 100;
// PROTOCOL.md "Moderation": a mute's or ban's retry_ms is the time it has
// left, at most a day.
constexpr int64_t kMaxSanctionRetryMs = 86'400'000;
// WebSocket "try again later": a hello the connect hook could not decide.
constexpr int kCloseTryLater = 1013;
const std::string kNoRid;
}  // namespace

ClientSession::ClientSession(Gateway& gw, std::shared_ptr<net::Connection> conn, uint64_t conn_id,
                             int64_t hello_deadline_ms)
    : gw_(gw),
      conn_(std::move(conn)),
      conn_id_(conn_id),
      hello_deadline_ms_(hello_deadline_ms) {}

void ClientSession::send(net::OutFrame&& frame) {
  if (gone()) return;
  if (conn_->send(std::move(frame))) return;
  send_over_cap();
}

void ClientSession::send_over_cap() {
  // Over max_queue_bytes: a slow consumer. It can reconnect and resume with `since`.
  gw_.metrics().local().inc(gw_.metrics().local().slow_consumers);
  std::string bye;
  protocol::encode_bye(bye, "slow_consumer", 0);
  conn_->send_last_and_close(net::OutFrame(std::move(bye)), kCloseSlowConsumer, "slow consumer");
}

void ClientSession::reply(std::string frame) { send(net::OutFrame(std::move(frame))); }

void ClientSession::reply_corked(std::string frame) {
  if (gone()) return;
  if (!conn_->send_corked(net::OutFrame(std::move(frame)))) return send_over_cap();
}

void ClientSession::reply_error(const std::string& rid, const Error& e) {
  gw_.metrics().local().reject(e.code);
  if (tenant_) tenant_->reject(e.code);
  std::string out;
  protocol::encode_error(out, rid, e);
  reply(std::move(out));
}

void ClientSession::fail(const std::string& rid, ErrorCode code, std::string msg, int close_code) {
  Error e{code, std::move(msg), 0};
  if (close_code == 0) return reply_error(rid, e);
  gw_.metrics().local().reject(code);
  if (tenant_) tenant_->reject(code);
  std::string out;
  protocol::encode_error(out, rid, e);
  close_with(std::move(out), close_code, std::string(wire_name(code)));
}

void ClientSession::close_with(std::string frame, int code, std::string reason) {
  conn_->send_last_and_close(net::OutFrame(std::move(frame)), code, std::move(reason));
}

void ClientSession::on_frame(std::string_view payload, bool binary) {
  auto& m = gw_.metrics().local();
  m.inc(m.frames_in);
  const int64_t arrived = steady_ns();
  // A reload may have changed the tenant's limits: this connection takes them
  // up at its next frame (one pointer compare when nothing changed).
  if (tenant_ && &tenant_->snapshot() != limits_of_) apply_tenant_limits();
  protocol::DecodeLimits limits;
  limits.max_message_bytes =
      tenant_ ? limits_of_->config.max_message_bytes : gw_.options().preauth_frame_bytes;
  // PROTOCOL.md "Binary encoding": a WebSocket's subprotocol fixes its frame
  // type; TCP and Unix switch to MessagePack after a welcome that says so.
  const bool msgpack = conn_->encoding() == protocol::Encoding::kMsgpack;
  const bool wrong_type = conn_->transport() == net::Transport::kWebSocket && binary != msgpack;
  // docs/protocol-notes.md: before `welcome`, anything but a valid hello
  // (an oversized, undecodable or wrong-type frame included) is unauthorized/4001.
  if (!tenant_ && (wrong_type || payload.size() > limits.max_message_bytes)) {
    return fail(kNoRid, ErrorCode::kUnauthorized, "expected hello", kCloseUnauthorized);
  }
  // PROTOCOL.md: a frame over 4 x max_message_bytes closes with 1009. The
  // transports cap frames at the largest tenant's limit (the tenant is known
  // only at hello), so a tenant with a smaller limit is held to it here.
  if (payload.size() > protocol::hard_frame_limit(limits)) {
    return conn_->close(kCloseTooBig, "message too big");
  }
  if (wrong_type) {
    return fail(kNoRid, ErrorCode::kBadRequest,
                msgpack ? "text frame on a MessagePack connection; send binary"
                        : "binary frame on a JSON connection; send text");
  }
  auto decoded = msgpack ? protocol::decode_client_op_msgpack(payload, limits)
                         : protocol::decode_client_op(payload, limits);
  m.observe(metrics::Stage::kDecode, steady_ns() - arrived);
  if (auto* failure = std::get_if<protocol::DecodeFailure>(&decoded)) {
    if (!tenant_) {
      return fail(failure->rid, ErrorCode::kUnauthorized, "expected hello",
                  kCloseUnauthorized);
    }
    return reply_error(failure->rid, failure->error);
  }
  auto& op = std::get<protocol::ClientOp>(decoded);
  if (hook_busy_) return hold(std::move(op), arrived);
  dispatch(op, arrived);
}

void ClientSession::dispatch(protocol::ClientOp& op, int64_t arrived) {
  using protocol::OpKind;
  if (op.kind == OpKind::kHello) return on_hello(op);
  if (gw_.draining() && (op.kind == OpKind::kPub || op.kind == OpKind::kJoin ||
                         op.kind == OpKind::kEdit || op.kind == OpKind::kDelete ||
                         op.kind == OpKind::kState || op.kind == OpKind::kUp ||
                         op.kind == OpKind::kEmit || op.kind == OpKind::kTail ||
                         op.kind == OpKind::kConsume || op.kind == OpKind::kCommit)) {
    return reply_error(op.rid, Error{ErrorCode::kUnavailable, "server is draining",
                                     gw_.options().drain_reconnect_ms});
  }
  if (!tenant_) return fail(op.rid, ErrorCode::kUnauthorized, "say hello first", kCloseUnauthorized);
  switch (op.kind) {
    case OpKind::kJoin: return on_join(op);
    case OpKind::kLeave: return on_leave(op);
    case OpKind::kPub: return on_pub(op, arrived);
    case OpKind::kState: return on_state(op);
    case OpKind::kUp: return on_up(op);
    case OpKind::kHistory: return on_history(op);
    case OpKind::kEdit:
    case OpKind::kDelete: return on_moderate(op, arrived);
    case OpKind::kPing: {
      std::string out;
      protocol::encode_pong(out, op.rid, wall_ms());
      return reply(std::move(out));
    }
    case OpKind::kEmit:
    case OpKind::kTail:
    case OpKind::kConsume:
    case OpKind::kCommit:
    case OpKind::kRank:
      return on_event_op(op);
    case OpKind::kHello: break;
  }
}

void ClientSession::hold(protocol::ClientOp op, int64_t arrived_ns) {
  auto& r = rare();
  const size_t bytes = op.body.size();
  if (r.held_ops.size() >= kMaxHeldOps || r.held_bytes + bytes > kMaxHeldBytes) {
    if (!tenant_) return fail(op.rid, ErrorCode::kUnauthorized, "expected hello", kCloseUnauthorized);
    return reply_error(op.rid, Error{ErrorCode::kBackpressure, "too many frames behind a hook", kHeldRetryMs});
  }
  r.held_bytes += bytes;
  r.held_ops.emplace_back(std::move(op), arrived_ns);
}

void ClientSession::resume_held() {
  hook_busy_ = false;
  while (!hook_busy_ && rare_ && !rare_->held_ops.empty() && !gone()) {
    auto [op, arrived] = std::move(rare_->held_ops.front());
    rare_->held_ops.pop_front();
    rare_->held_bytes -= op.body.size();
    dispatch(op, arrived);
  }
}

HookAsk ClientSession::hook_ask(HookKind kind, const HookConfig& hook, const std::string& ch) const {
  HookAsk ask;
  ask.kind = kind;
  ask.tenant = &tenant_->config();
  ask.hook = &hook;
  ask.ns = std::string(protocol::channel_namespace(ch));
  ask.ch = ch;
  ask.user = user_;
  ask.conn = conn_id_;
  return ask;
}

void ClientSession::ask_hook(HookAsk ask, std::function<void(HookVerdict)> then) {
  hook_busy_ = true;
  gw_.hooks()->ask(loop(), std::move(ask),
                   [self = shared_from_this(), then = std::move(then)](HookVerdict v) {
                     if (self->closed_) return;  // on_closed dropped the held frames
                     then(std::move(v));
                     self->resume_held();
                   });
}

void ClientSession::on_event_op(protocol::ClientOp& op) {
  const auto& cfg = tenant_->config();
  const bool known = op.kind == protocol::OpKind::kRank ? cfg.leaderboards.contains(op.board)
                                                        : cfg.topic(op.topic) != nullptr;
  if (!known) {
    return fail(op.rid, ErrorCode::kNotFound,
                op.kind == protocol::OpKind::kRank ? "unknown board" : "unknown topic");
  }
  if (!gw_.events()) {
    return fail(op.rid, ErrorCode::kUnavailable, "event streams are not available");
  }
  switch (op.kind) {
    case protocol::OpKind::kEmit: return on_emit(op, steady_ns());
    case protocol::OpKind::kTail: return on_tail(op);
    case protocol::OpKind::kConsume: return on_consume(op);
    case protocol::OpKind::kCommit: return on_commit(op);
    case protocol::OpKind::kRank: return on_rank(op);
    default: break;
  }
}

void ClientSession::reply_event_error(const std::string& rid, const Error& e,
                                      const std::optional<OffsetRange>& range) {
  if (e.code != ErrorCode::kOutOfRange || !range) return reply_error(rid, e);
  gw_.metrics().local().reject(e.code);
  tenant_->reject(e.code);
  std::string out;
  protocol::encode_out_of_range(out, rid, e.msg, *range);
  reply(std::move(out));
}

void ClientSession::on_emit(protocol::ClientOp& op, int64_t arrived_ns) {
  // PROTOCOL.md: each event counts against the tenant's events_per_sec.
  const int wait =
      tenant_->events_bucket.take(steady_ns(), static_cast<uint32_t>(op.events.size()));
  if (wait > 0) {
    return reply_error(op.rid, Error{ErrorCode::kRateLimited, "event rate exceeded", wait});
  }
  events::EmitRequest req;
  req.tenant = &tenant_->config();
  req.topic = op.topic;
  req.from = user_;
  req.events = std::move(op.events);
  req.arrived_ns = arrived_ns;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), topic = op.topic,
              arrived_ns](events::EmitOutcome out) {
    if (!out.status) return self->reply_error(rid, out.status.error());
    std::string frame;
    protocol::encode_emitted(frame, rid, topic, out.offs, out.dup);
    // Corked: a producer's acks of one task leave in one write.
    self->reply_corked(std::move(frame));
    self->gw_.metrics().local().observe(metrics::Stage::kAck, steady_ns() - arrived_ns);
  };
  gw_.events()->emit(std::move(req));
}

void ClientSession::on_tail(protocol::ClientOp& op) {
  if (op.p && *op.p >= tenant_->config().topic(op.topic)->partitions) {
    return fail(op.rid, ErrorCode::kNotFound, "unknown partition");
  }
  if (!tails(op.topic)) rare().topics.push_back(op.topic);
  events::TailRequest req;
  req.tenant = &tenant_->config();
  req.topic = op.topic;
  req.p = op.p;
  req.from = op.from;
  req.from_off = op.from_off;
  req.sink = std::static_pointer_cast<events::EventSink>(shared_from_this());
  req.conn = conn_id_;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), topic = op.topic](events::StartOutcome out) {
    if (self->closed_) return;
    if (!out.status) return self->reply_event_error(rid, out.status.error(), out.range);
    std::vector<std::pair<uint32_t, uint64_t>> parts;
    for (const auto& pn : out.parts) parts.emplace_back(pn.p, pn.next);
    std::string frame;
    protocol::encode_tailing(frame, rid, topic, parts);
    self->reply(std::move(frame));
  };
  gw_.events()->tail(std::move(req));
}

void ClientSession::on_consume(protocol::ClientOp& op) {
  if (!tails(op.topic)) rare().topics.push_back(op.topic);
  events::ConsumeRequest req;
  req.tenant = &tenant_->config();
  req.topic = op.topic;
  req.group = op.group;
  req.sink = std::static_pointer_cast<events::EventSink>(shared_from_this());
  req.conn = conn_id_;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), topic = op.topic,
              group = op.group](events::StartOutcome out) {
    if (self->closed_) return;
    if (!out.status) return self->reply_event_error(rid, out.status.error(), out.range);
    std::vector<std::pair<uint32_t, uint64_t>> parts;
    for (const auto& pn : out.parts) parts.emplace_back(pn.p, pn.next);
    std::string frame;
    protocol::encode_assigned(frame, rid, topic, group, out.gen, parts);
    self->reply(std::move(frame));
  };
  gw_.events()->consume(std::move(req));
}

void ClientSession::on_commit(protocol::ClientOp& op) {
  events::CommitRequest req;
  req.tenant = &tenant_->config();
  req.topic = op.topic;
  req.group = op.group;
  req.conn = conn_id_;
  req.gen = op.gen;
  req.p = *op.p;
  req.off = op.off;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid)](Status st,
                                                                 std::optional<OffsetRange> range) {
    if (self->closed_) return;
    if (!st) return self->reply_event_error(rid, st.error(), range);
    std::string frame;
    protocol::encode_committed(frame, rid);
    // Corked: it leaves with the consumer's events frames of the same task,
    // in one write.
    self->reply_corked(std::move(frame));
  };
  gw_.events()->commit(std::move(req));
}

void ClientSession::on_rank(protocol::ClientOp& op) {
  events::RankRequest req;
  req.tenant = &tenant_->config();
  req.board = op.board;
  req.member = op.member;
  req.around = op.around;
  req.round = op.round;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), board = op.board,
              round = op.round](Status st, std::vector<events::RankEntry>, std::vector<events::RankEntry> entries) {
    if (self->closed_) return;
    if (!st) return self->reply_error(rid, st.error());
    std::vector<protocol::RankView> views;
    views.reserve(entries.size());
    for (const auto& e : entries) views.push_back({e.member, e.score, e.rank});
    std::string frame;
    protocol::encode_ranks(frame, rid, board, round ? std::string_view(*round) : std::string_view(),
                           round.has_value(), views);
    self->reply(std::move(frame));
  };
  gw_.events()->rank(std::move(req));
}

void ClientSession::watch_board(const std::string& ch) {
  if (!gw_.events()) return;
  auto b = events::parse_board_channel(ch, tenant_->config());
  if (!b) return;
  rare().boards.emplace_back(b->board, b->round);
  gw_.events()->watch_board(&tenant_->config(), b->board, b->round,
                            std::static_pointer_cast<events::EventSink>(shared_from_this()), conn_id_, user_);
}

void ClientSession::unwatch_board(const std::string& ch) {
  if (!gw_.events()) return;
  auto b = events::parse_board_channel(ch, tenant_->config());
  if (!b) return;
  if (!rare_) return;
  auto& boards = rare_->boards;
  auto it = std::find(boards.begin(), boards.end(), std::make_pair(b->board, b->round));
  if (it == boards.end()) return;
  boards.erase(it);
  gw_.events()->unwatch_board(&tenant_->config(), b->board, b->round, conn_id_);
}

void ClientSession::deliver_event_frame(std::string frame, std::function<void()> written) {
  if (gone()) return;
  if (!written) return send(net::OutFrame(std::move(frame)));
  // A catch-up page: on the backfill allowance, and the next one once written.
  net::OutFrame f(std::move(frame));
  f.backfill = true;
  send(std::move(f));
  if (!gone()) after_backfill(std::move(written));
}

void ClientSession::deliver_event_frames(std::vector<std::string> frames) {
  if (gone()) return;
  for (auto& f : frames) {
    if (!conn_->send_corked(net::OutFrame(std::move(f)))) return send_over_cap();
  }
}

bool ClientSession::tails(const std::string& topic) const {
  if (!rare_) return false;
  const auto& topics = rare_->topics;
  return std::find(topics.begin(), topics.end(), topic) != topics.end();
}

void ClientSession::after_backfill(std::function<void()> fn) {
  auto& waiters = rare().backfill_waiters;
  waiters.push_back(std::move(fn));
  if (waiters.size() > 1) return;  // the hook is set already
  conn_->when_backfill_drained([self = shared_from_this()] {
    if (!self->rare_) return;  // closed since: on_closed dropped the waiters
    auto waiting = std::move(self->rare_->backfill_waiters);
    self->rare_->backfill_waiters.clear();
    for (auto& fn : waiting) fn();
  });
}

void ClientSession::on_refused(net::Refusal why) {
  if (!tenant_) {
    // docs/protocol-notes.md: before `welcome`, anything but a valid hello is
    // unauthorized/4001, a frame refused from its header or for want of
    // pre-auth memory included.
    return fail(kNoRid, ErrorCode::kUnauthorized,
                why == net::Refusal::kFrameTooLarge ? "expected hello"
                                                    : "server busy: too much unauthenticated input",
                kCloseUnauthorized);
  }
  conn_->close(kCloseTooBig, "message too big");
}

void ClientSession::on_hello(protocol::ClientOp& op) {
  if (tenant_) return fail(op.rid, ErrorCode::kBadRequest, "hello was already accepted");
  if (op.v != protocol::kProtocolVersion) {
    return fail(op.rid, ErrorCode::kBadRequest, "unsupported protocol version", kCloseBadVersion);
  }
  // PROTOCOL.md "Binary encoding": an encoding this server does not speak is
  // bad_request, and the connection stays open, in JSON, for another hello.
  if (op.enc_unsupported) {
    return reply_error(op.rid, Error{ErrorCode::kBadRequest, "unsupported enc"});
  }
  TenantRuntime* t = nullptr;
  Result<auth::Claims> claims = Error{ErrorCode::kUnauthorized, "invalid token"};
  if (!op.api_key.empty()) {
    // PROTOCOL.md: a game server may say hello with its tenant's api_key, on TCP
    // and Unix only (a browser must never hold that key), acting as "server".
    if (conn_->transport() == net::Transport::kWebSocket) {
      return fail(op.rid, ErrorCode::kUnauthorized, "api_key is not accepted over WebSocket",
                  kCloseUnauthorized);
    }
    t = gw_.tenants().find_by_api_key(op.api_key, wall_ms());
    if (!t) return fail(op.rid, ErrorCode::kUnauthorized, "invalid api key", kCloseUnauthorized);
    auth::Claims server;
    server.sub = std::string(protocol::kServerUser);
    server.tenant = t->id;
    server.mod = true;  // the game server moderates every message
    claims = std::move(server);
  } else {
    auto tenant_id = auth::peek_tenant(op.token);
    t = tenant_id ? gw_.tenants().find(*tenant_id) : nullptr;
    if (!t) return fail(op.rid, ErrorCode::kUnauthorized, "invalid token", kCloseUnauthorized);
    const TenantSnapshot& snap = t->snapshot();
    const int64_t now_ms = wall_ms();
    claims = auth::verify_hs256(op.token, snap.config.secret, now_ms / 1000);
    // Within a rotation's overlap, a token signed with the replaced secret is
    // still good (docs/operations.md "Reloading the config").
    if (!claims && !snap.previous_secret.empty() && now_ms < snap.previous_secret_until_ms) {
      auto old = auth::verify_hs256(op.token, snap.previous_secret, now_ms / 1000);
      if (old) claims = std::move(old);
    }
  }
  if (!claims) return fail(op.rid, ErrorCode::kUnauthorized, claims.error().msg, kCloseUnauthorized);
  if (op.api_key.empty() && claims->sub == protocol::kServerUser) {
    // The HTTP API's identity (PROTOCOL.md: `"from":"server"`): a player
    // claiming it would pass for the game server and share its dedupe space.
    return fail(op.rid, ErrorCode::kUnauthorized, "user id \"server\" is reserved",
                kCloseUnauthorized);
  }
  const auto& origins = t->config().allowed_origins;
  if (conn_->transport() == net::Transport::kWebSocket && !origins.empty() &&
      std::find(origins.begin(), origins.end(), conn_->origin()) == origins.end()) {
    return fail(op.rid, ErrorCode::kUnauthorized, "origin not allowed", kCloseUnauthorized);
  }
  const HookConfig& hook = t->config().hook_connect;
  if (!hook.url.empty() && gw_.hooks()) {
    HookAsk ask;
    ask.kind = HookKind::kConnect;
    ask.tenant = &t->config();
    ask.hook = &hook;
    ask.user = claims->sub;
    ask.conn = conn_id_;
    return ask_hook(std::move(ask), [this, t, claims = std::move(*claims), op = std::move(op)](HookVerdict v) mutable {
      if (v.allow) return admit(t, std::move(claims), op);
      // PROTOCOL.md "Hooks": a denied hello closes as a bad token does; one the
      // app server could not decide closes with "try again later".
      const bool later = v.error.code == ErrorCode::kUnavailable || v.error.code == ErrorCode::kBackpressure;
      gw_.metrics().local().reject(v.error.code);
      std::string out;
      protocol::encode_error(out, op.rid, v.error);
      close_with(std::move(out), later ? kCloseTryLater : kCloseUnauthorized,
                 std::string(wire_name(v.error.code)));
    });
  }
  admit(t, std::move(*claims), op);
}

void ClientSession::admit(TenantRuntime* t, auth::Claims claims, const protocol::ClientOp& op) {
  // Until here the socket held a PreauthTicket; from here it holds one of
  // the process's max_connections slots (net/preauth_budget.h).
  if (!gw_.take_slot()) {
    return fail(op.rid, ErrorCode::kQuotaExceeded, "server connection limit reached",
                kCloseQuota);
  }
  if (!t->try_connect()) {
    gw_.release_slot();
    return fail(op.rid, ErrorCode::kQuotaExceeded, "tenant connection limit reached",
                kCloseQuota);
  }
  tenant_ = t;
  user_ = std::move(claims.sub);
  moderator_ = claims.mod;
  if (claims.has_chans) chan_claims_ = std::make_unique<auth::Claims>(std::move(claims));
  apply_tenant_limits();
  gw_.on_authenticated(*this);
  // TCP and Unix: the welcome is JSON, every frame after it MessagePack. A
  // WebSocket's encoding is its subprotocol's; its hello's `enc` is ignored.
  const bool switch_to_msgpack = op.enc == protocol::Encoding::kMsgpack &&
                                 conn_->transport() != net::Transport::kWebSocket;
  std::string out;
  protocol::encode_welcome(out, op.rid, hub::connection_name(conn_id_), user_, t->id,
                           static_cast<int>(gw_.options().heartbeat_ms),
                           switch_to_msgpack || conn_->encoding() == protocol::Encoding::kMsgpack,
                           op.cap_state_delta, op.cap_state_delta && op.cap_state_delta_batch);
  state_deltas_ = op.cap_state_delta;
  // PROTOCOL.md "Batched state deltas": granted only with state_delta.
  state_delta_batch_ = op.cap_state_delta && op.cap_state_delta_batch;
  // Counted where the bytes leave (net::Connection), the welcome included.
  const bool mp = switch_to_msgpack || conn_->encoding() == protocol::Encoding::kMsgpack;
  conn_->set_account(gw_.metrics().traffic_table().of(t->id, "-"), metrics::wire_form(mp, state_deltas_));
  reply(std::move(out));
  if (switch_to_msgpack) conn_->set_encoding(protocol::Encoding::kMsgpack);
}

void ClientSession::apply_tenant_limits() {
  const TenantSnapshot* snap = &tenant_->snapshot();
  const TenantConfig& cfg = snap->config;
  if (!limits_of_ || limits_of_->config.publish_per_conn_sec != cfg.publish_per_conn_sec) {
    conn_bucket_ = auth::TokenBucket(cfg.publish_per_conn_sec);
  }
  conn_->set_queue_cap(cfg.max_queue_bytes);
  protocol::DecodeLimits tenant_limits;
  tenant_limits.max_message_bytes = cfg.max_message_bytes;
  conn_->set_authenticated(protocol::hard_frame_limit(tenant_limits));
  limits_of_ = snap;
}

void ClientSession::on_join(protocol::ClientOp& op) {
  if (!channel_allowed(op.ch)) {
    return fail(op.rid, ErrorCode::kForbidden, "channel not allowed by the token");
  }
  auto existing = joined_.find(op.ch);
  if (existing == joined_.end() && joined_.size() >= tenant_->config().max_channels_per_conn) {
    return fail(op.rid, ErrorCode::kQuotaExceeded, "too many channels on this connection");
  }
  if (existing != joined_.end() && existing->second.joining) {
    return fail(op.rid, ErrorCode::kBadRequest, "a join of this channel is in flight");
  }
  if (refused_by(cluster::SanctionKind::kBan, op.rid, op.ch)) return;
  const HookConfig& hook = tenant_->config().ns(protocol::channel_namespace(op.ch)).hook_join;
  if (!hook.url.empty() && gw_.hooks()) {
    HookAsk ask = hook_ask(HookKind::kJoin, hook, op.ch);
    ask.since = op.since;
    return ask_hook(std::move(ask), [this, op = std::move(op)](HookVerdict v) mutable {
      if (!v.allow) return reply_error(op.rid, v.error);
      // Banned while the app server was asked.
      if (refused_by(cluster::SanctionKind::kBan, op.rid, op.ch)) return;
      start_join(op);
    });
  }
  start_join(op);
}

void ClientSession::start_join(protocol::ClientOp& op) {
  auto existing = joined_.find(op.ch);
  hub::JoinRequest req;
  req.sub = shared_from_this();
  req.tenant = &tenant_->config();
  req.ch = op.ch;
  req.since = op.since;
  req.done = [self = shared_from_this(), rid = op.rid, ch = op.ch](hub::JoinResult r) {
    if (self->closed_) return;  // the close already left the channel
    auto it = self->joined_.find(ch);
    // Whatever this reply leads to, the held pub replies go right behind it.
    std::vector<std::function<void()>> held;
    if (it != self->joined_.end() && it->second.waiting) held.swap(it->second.waiting->held_replies);
    struct Release {
      std::vector<std::function<void()>>& held;
      ~Release() {
        for (auto& f : held) f();
      }
    } release{held};
    if (!r.status) {
      self->reply_error(rid, r.status.error());
      if (it == self->joined_.end()) return;
      it->second.joining = false;
      if (it->second.waiting) {
        for (const auto& leave_rid : it->second.waiting->leave_rids) {
          std::string left;
          protocol::encode_left(left, leave_rid, ch);
          self->reply(std::move(left));
        }
      }
      // A first join that failed leaves (dropping the membership); a repeated
      // one keeps the membership it had.
      if (!it->second.joined_once || it->second.leave_asked()) self->joined_.erase(it);
      return;
    }
    std::string out;
    const std::span<const std::string> members(r.members);
    protocol::encode_joined(out, rid, ch, r.seq, r.recovered, r.has_members ? &members : nullptr,
                            r.epoch);
    self->reply(std::move(out));
    if (it == self->joined_.end()) return;
    it->second.joining = false;
    const bool first = !it->second.joined_once;
    it->second.joined_once = true;
    if (it->second.leave_asked()) {
      // Left before the join landed: the hub did not register it for delivery.
      for (const auto& leave_rid : it->second.waiting->leave_rids) {
        std::string left;
        protocol::encode_left(left, leave_rid, ch);
        self->reply(std::move(left));
      }
      self->joined_.erase(it);
      return;
    }
    if (first) {
      self->forward_upstream(hub::UpstreamEventType::kJoin, kForwardJoin, ch);
      if (it->second.waiting) {
        for (auto& ev : it->second.waiting->held_upstream) {
          self->gw_.hub().forward_upstream(std::move(ev));
        }
        it->second.waiting.reset();  // no leave waits (above): nothing else is in it
      }
      self->watch_board(ch);
    }
    // The hub sends the backfill right after this returns.
  };
  if (existing != joined_.end()) {
    existing->second.joining = true;
    return gw_.hub().rejoin(existing->second.membership, std::move(req));
  }
  Joined& j = joined_[op.ch];
  j.membership = gw_.hub().join(std::move(req));
}

void ClientSession::on_leave(protocol::ClientOp& op) {
  if (!op.topic.empty()) {
    auto answer = [self = shared_from_this(), rid = op.rid, topic = op.topic, group = op.group] {
      if (self->closed_) return;
      std::string out;
      protocol::encode_left_topic(out, rid, topic, group);
      self->reply(std::move(out));
    };
    // Nothing to end on a topic it never tailed or consumed (or an unknown one).
    if (!gw_.events() || !tails(op.topic)) {
      return answer();
    }
    return gw_.events()->leave(&tenant_->config(), op.topic, op.group, conn_id_, loop(),
                               std::move(answer));
  }
  auto it = joined_.find(op.ch);
  if (it != joined_.end()) {
    it->second.membership.leave();
    if (it->second.joining) {
      // A repeated join in flight: the membership it had ends now.
      if (it->second.joined_once && !it->second.leave_asked()) {
        forward_upstream(hub::UpstreamEventType::kLeave, kForwardLeave, op.ch);
        unwatch_board(op.ch);
      }
      it->second.wait().leave_rids.push_back(op.rid);
      return;  // `left` follows the join's reply
    }
    joined_.erase(it);
    forward_upstream(hub::UpstreamEventType::kLeave, kForwardLeave, op.ch);
    unwatch_board(op.ch);
  }
  std::string out;
  protocol::encode_left(out, op.rid, op.ch);
  reply(std::move(out));
}

bool ClientSession::refused_by(cluster::SanctionKind kind, const std::string& rid,
                               const std::string& ch) {
  Moderation* m = gw_.moderation();
  if (!m) return false;
  const bool mute = kind == cluster::SanctionKind::kMute;
  const int64_t now = wall_ms();
  const int64_t until = mute ? m->muted_until(loop(), tenant_->id, user_, ch, now)
                             : m->banned_until(loop(), tenant_->id, user_, ch, now);
  if (until == 0) return false;
  auto& local = gw_.metrics().local();
  local.inc(mute ? local.mutes_enforced : local.bans_enforced);
  reply_error(rid, Error{ErrorCode::kForbidden, mute ? "muted" : "banned from this channel",
                         static_cast<int>(std::min(until - now, kMaxSanctionRetryMs))});
  return true;
}

bool ClientSession::kick(const std::string& ch, const std::string& reason) {
  if (closed_ || !tenant_) return false;
  auto it = joined_.find(ch);
  if (it == joined_.end() || it->second.leave_asked()) return false;
  it->second.membership.leave();
  if (it->second.joining) {
    // A join in flight: its reply comes as usual, then `left` without a rid
    // (the `leave` path); a repeated one's membership ends now.
    if (it->second.joined_once) {
      forward_upstream(hub::UpstreamEventType::kLeave, kForwardLeave, ch);
      unwatch_board(ch);
    }
    it->second.wait().leave_rids.push_back(kNoRid);
  } else {
    joined_.erase(it);
    forward_upstream(hub::UpstreamEventType::kLeave, kForwardLeave, ch);
    unwatch_board(ch);
  }
  std::string out;
  protocol::encode_kicked(out, ch, reason);
  reply(std::move(out));
  return true;
}

bool ClientSession::take_rate(const std::string& rid, bool tenant_wide) {
  const int64_t now = steady_ns();
  int wait = conn_bucket_.take(now);
  if (wait == 0 && tenant_wide) wait = tenant_->publish_bucket.take(now);
  if (wait == 0) return true;
  reply_error(rid, Error{ErrorCode::kRateLimited, "publish rate exceeded", wait});
  return false;
}

void ClientSession::on_pub(protocol::ClientOp& op, int64_t arrived_ns) {
  if (!joined_.contains(op.ch)) return fail(op.rid, ErrorCode::kForbidden, "join the channel first");
  if (refused_by(cluster::SanctionKind::kMute, op.rid, op.ch)) return;
  if (!take_rate(op.rid, true)) return;
  const HookConfig& hook = tenant_->config().ns(protocol::channel_namespace(op.ch)).hook_pub;
  if (!hook.url.empty() && gw_.hooks()) {
    HookAsk ask = hook_ask(HookKind::kPub, hook, op.ch);
    ask.id = op.id;
    ask.body = op.body;
    // A denied pub is never sequenced; a modified one is stored as modified.
    return ask_hook(std::move(ask), [this, op = std::move(op), arrived_ns](HookVerdict v) mutable {
      if (!v.allow) return reply_error(op.rid, v.error);
      // Muted while the app server was asked.
      if (refused_by(cluster::SanctionKind::kMute, op.rid, op.ch)) return;
      if (v.body) op.body = std::move(*v.body);
      publish(op, arrived_ns);
    });
  }
  publish(op, arrived_ns);
}

void ClientSession::publish(protocol::ClientOp& op, int64_t arrived_ns) {
  hub::PublishRequest req;
  req.tenant = &tenant_->config();
  req.ch = op.ch;
  req.from = user_;
  req.conn = conn_id_;
  req.id = op.id;
  req.body = std::move(op.body);
  req.arrived_ns = arrived_ns;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), ch = op.ch, id = op.id,
              arrived_ns](store::AppendOutcome out) mutable {
    // The channel's join is still in flight: this reply waits for `joined`.
    // Bounded by the pubs one connection gets in during a join's round trips
    // (its rate limit); past the bound, replies go at once.
    constexpr size_t kMaxHeldReplies = 1024;
    if (auto it = self->joined_.find(ch); it != self->joined_.end() && it->second.joining && !self->closed_ &&
                                           it->second.wait().held_replies.size() < kMaxHeldReplies) {
      it->second.waiting->held_replies.push_back([self, rid = std::move(rid), ch = std::move(ch), id = std::move(id),
                                         arrived_ns, out = std::move(out)]() mutable {
        self->answer_pub(rid, ch, id, arrived_ns, std::move(out));
      });
      return;
    }
    self->answer_pub(rid, ch, id, arrived_ns, std::move(out));
  };
  gw_.hub().publish(std::move(req));
}

void ClientSession::answer_pub(const std::string& rid, const std::string& ch, const std::string& id,
                               int64_t arrived_ns, store::AppendOutcome out) {
  if (!out) return reply_error(rid, out.error());
  std::string ack;
  protocol::encode_ack(ack, rid, ch, id, out->seq, out->dup);
  // Corked: it leaves with the echo of the message if that is delivered
  // in the same task (the publisher is a member), in one write.
  reply_corked(std::move(ack));
  if (!out->dup) tenant_->messages.fetch_add(1, std::memory_order_relaxed);
  gw_.metrics().local().observe(metrics::Stage::kAck, steady_ns() - arrived_ns);
}

void ClientSession::on_moderate(protocol::ClientOp& op, int64_t arrived_ns) {
  // As `history`: the token must allow the channel; no join is needed.
  if (!channel_allowed(op.ch)) {
    return fail(op.rid, ErrorCode::kForbidden, "channel not allowed by the token");
  }
  if (!take_rate(op.rid, true)) return;
  const bool edit = op.kind == protocol::OpKind::kEdit;
  hub::ModerateRequest req;
  req.tenant = &tenant_->config();
  req.ch = op.ch;
  req.edit = edit;
  req.target = op.target;
  req.body = std::move(op.body);
  req.from = user_;
  req.conn = conn_id_;
  req.moderator = moderator_;
  req.arrived_ns = arrived_ns;
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(op.rid), ch = op.ch, edit,
              target = op.target](store::AppendOutcome out) {
    if (self->closed_) return;
    if (!out) return self->reply_error(rid, out.error());
    std::string reply;
    protocol::encode_moderated(reply, rid, edit, ch, target, out->seq);
    self->reply_corked(std::move(reply));
  };
  gw_.hub().moderate(std::move(req));
}

void ClientSession::on_state(protocol::ClientOp& op) {
  if (!joined_.contains(op.ch)) return fail(op.rid, ErrorCode::kForbidden, "join the channel first");
  if (refused_by(cluster::SanctionKind::kMute, op.rid, op.ch)) return;
  if (!take_rate(op.rid, false)) return;
  const TenantConfig& cfg = tenant_->config();
  if (cfg.ns(protocol::channel_namespace(op.ch)).forwards(kForwardState)) {
    forward_upstream(hub::UpstreamEventType::kState, kForwardState, op.ch, op.key, op.body);
  }
  gw_.hub().state(hub::StateRequest{&cfg, op.ch, user_, conn_id_, std::move(op.key),
                                    std::move(op.body), op.pos});
}

void ClientSession::on_up(protocol::ClientOp& op) {
  if (!joined_.contains(op.ch)) return fail(op.rid, ErrorCode::kForbidden, "join the channel first");
  if (refused_by(cluster::SanctionKind::kMute, op.rid, op.ch)) return;
  if (!take_rate(op.rid, false)) return;
  const auto& ns = tenant_->config().ns(protocol::channel_namespace(op.ch));
  if (ns.upstream.empty()) return fail(op.rid, ErrorCode::kBadRequest, "namespace has no upstream");
  if (!(ns.forward & kForwardUp)) {
    return fail(op.rid, ErrorCode::kBadRequest, "namespace does not forward up");
  }
  forward_upstream(hub::UpstreamEventType::kUp, kForwardUp, op.ch, {}, std::move(op.body));
}

void ClientSession::forward_upstream(hub::UpstreamEventType type, ForwardBit bit,
                                     const std::string& ch, std::string key, std::string body) {
  if (!gw_.hub().upstream()) return;
  const TenantConfig& cfg = tenant_->config();
  const auto& ns = cfg.ns(protocol::channel_namespace(ch));
  if (!ns.forwards(bit)) return;
  hub::UpstreamEvent ev;
  ev.type = type;
  ev.tenant = &cfg;
  ev.ns = &ns;
  ev.ch = ch;
  ev.user = user_;
  ev.conn = conn_id_;
  ev.ts_ms = wall_ms();
  ev.key = std::move(key);
  ev.body = std::move(body);
  if (type != hub::UpstreamEventType::kJoin) {
    // A client may pipeline `join` and `up`: the join event is forwarded when
    // the join's reply comes, so what follows it waits until then. Bounded
    // by the per-connection rate of state and up during one store round trip;
    // past kMaxHeldUpstream, events go at once rather than pile up.
    constexpr size_t kMaxHeldUpstream = 1024;
    auto it = joined_.find(ch);
    if (it != joined_.end() && it->second.joining && !it->second.joined_once &&
        (!it->second.waiting || it->second.waiting->held_upstream.size() < kMaxHeldUpstream)) {
      it->second.wait().held_upstream.push_back(std::move(ev));
      return;
    }
  }
  gw_.hub().forward_upstream(std::move(ev));
}

void ClientSession::on_history(protocol::ClientOp& op) {
  if (!channel_allowed(op.ch)) {
    return fail(op.rid, ErrorCode::kForbidden, "channel not allowed by the token");
  }
  PendingHistory h{std::move(op.rid), std::move(op.ch), op.after, op.before, op.limit};
  if (!history_busy_) return start_history(std::move(h));
  auto& queue = rare().history_queue;
  if (queue.size() >= kMaxQueuedHistory) {
    return reply_error(h.rid, Error{ErrorCode::kBackpressure,
                                    "too many history requests in flight", kHistoryRetryMs});
  }
  queue.push_back(std::move(h));
}

void ClientSession::start_history(PendingHistory h) {
  history_busy_ = true;
  hub::HistoryRequest req;
  const TenantConfig& cfg = tenant_->config();
  req.tenant = &cfg;
  req.ch = h.ch;
  req.after = h.after;
  req.before = h.before;
  req.limit = h.limit;
  req.max_bytes = hub::history_reply_budget(cfg);
  req.reply_loop = loop();
  req.done = [self = shared_from_this(), rid = std::move(h.rid),
              ch = std::move(h.ch)](hub::HistoryResult r) {
    if (self->closed_) return;
    std::string out;
    if (!r.status) {
      self->gw_.metrics().local().reject(r.status.error().code);
      if (self->tenant_) self->tenant_->reject(r.status.error().code);
      protocol::encode_error(out, rid, r.status.error());
    } else {
      protocol::encode_history(out, rid, ch, r.msgs_json);
    }
    self->send_history_reply(std::move(out));
  };
  gw_.hub().history(std::move(req));
}

void ClientSession::send_history_reply(std::string frame) {
  if (gone()) return;
  // A reply is queued only when no backfill is: then one reply (at most
  // history_reply_budget bytes) always fits the backfill allowance, so a client
  // that pipelines `history` and reads normally is never a slow consumer.
  if (conn_->backfill_bytes() > 0) {
    after_backfill([self = shared_from_this(), frame = std::move(frame)]() mutable {
      if (!self->closed_) self->send_history_reply(std::move(frame));
    });
    return;
  }
  net::OutFrame f(std::move(frame));
  f.backfill = true;  // counted against the backfill allowance, not the live cap
  send(std::move(f));
  history_busy_ = false;
  if (rare_ && !rare_->history_queue.empty()) {
    PendingHistory next = std::move(rare_->history_queue.front());
    rare_->history_queue.pop_front();
    start_history(std::move(next));
  }
}

void ClientSession::on_closed() {
  if (closed_) return;
  closed_ = true;
  if (tenant_) {
    for (const auto& [ch, j] : joined_) {
      if (j.joined_once) forward_upstream(hub::UpstreamEventType::kLeave, kForwardLeave, ch);
    }
    joined_.clear();  // each membership leaves its channel
    if (rare_) {
      if (gw_.events()) {
        for (const auto& t : rare_->topics) {
          gw_.events()->disconnect(&tenant_->config(), t, conn_id_);
        }
        for (const auto& [b, r] : rare_->boards) {
          gw_.events()->unwatch_board(&tenant_->config(), b, r, conn_id_);
        }
      }
      rare_.reset();  // the queued history, the backfill waiters, topics and boards
    }
    tenant_->disconnect();
  }
  gw_.on_session_closed(*this);
}

}  // namespace parley::session
