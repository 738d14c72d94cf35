#include "api/http_api.h"

#include <simdjson.h>

#include <atomic>
#include <charconv>
#include <memory>
#include <vector>

#include "api/moderation_api.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "protocol/client_op.h"
#include "protocol/decoder.h"
#include "hub/history.h"
#include "hub/upstream_sink.h"
#include "protocol/encoder.h"
#include "protocol/identifier.h"
#include "session/moderation.h"

namespace parley::api {

namespace http = boost::beast::http;

namespace {

constexpr std::string_view kEventsPath = "/v1/events/";
constexpr std::string_view kBoardsPath = "/v1/leaderboards/";

// PROTOCOL.md "Moderation: mute, kick, ban".
bool is_sanction_path(std::string_view path) {
  return path == "/v1/mute" || path == "/v1/ban" || path == "/v1/kick" || path == "/v1/moderation";
}

using net::error_response;

net::HttpResponse bad(std::string msg) {
  return error_response(Error{ErrorCode::kBadRequest, std::move(msg)});
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<uint64_t> parse_u64(const std::string& s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The JSON body of a POST, validated as a client frame is (decoder.h).
std::variant<protocol::ApiPost, Error> parse_post(std::string_view text,
                                                  protocol::ApiPostKind kind,
                                                  size_t max_message_bytes) {
  protocol::DecodeLimits limits;
  limits.max_message_bytes = max_message_bytes;
  return protocol::decode_api_post(text, kind, limits);
}

// The answers of a batched request, one slot per element, sent as one JSON array
// once the last is known. Slots are filled by completions that may run on other
// loops; the counter orders the last fill before the answer.
struct BatchAnswer {
  explicit BatchAnswer(size_t n, std::function<void(net::HttpResponse)> r)
      : slots(n), pending(n), respond(std::move(r)) {}
  std::vector<std::string> slots;
  std::atomic<size_t> pending;
  std::function<void(net::HttpResponse)> respond;

  void fill(size_t i, std::string json) {
    slots[i] = std::move(json);
    if (pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    size_t len = 2;
    for (const auto& s : slots) len += s.size() + 1;
    std::string body;
    body.reserve(len);
    body += '[';
    for (size_t k = 0; k < slots.size(); ++k) {
      if (k) body += ',';
      body += slots[k];
    }
    body += ']';
    respond({200, "application/json", std::move(body)});
  }
};

}  // namespace

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != name) continue;
    std::string_view raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() &&
          hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
        out += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
        i += 2;
      } else {
        out += raw[i] == '+' ? ' ' : raw[i];
      }
    }
    return out;
  }
  return std::nullopt;
}

HttpApi::HttpApi(TenantRegistry& tenants, hub::Hub& hub, session::Gateway& gateway,
                 hub::Stores stores, metrics::Metrics& metrics)
    : tenants_(tenants), hub_(hub), gateway_(gateway), stores_(stores), metrics_(metrics) {}

void HttpApi::enable_admin(AdminOptions opts) {
  admin_ = std::make_unique<AdminApi>(std::move(opts), tenants_, hub_, gateway_, stores_, metrics_,
                                      draining_);
}

const TenantRuntime* HttpApi::tenant_of(const net::HttpRequestHeader& req) const {
  const std::string_view auth = req[http::field::authorization];
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.substr(0, kBearer.size()) != kBearer) return nullptr;
  return tenants_.find_by_api_key(auth.substr(kBearer.size()), wall_ms());
}

std::optional<net::HttpResponse> HttpApi::check_header(const net::HttpRequestHeader& req,
                                                       size_t& body_limit) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/healthz" || path == "/metrics") {
    body_limit = 0;  // no auth, so no body is read: one is 413
    return std::nullopt;
  }
  if (AdminApi::is_admin_path(path)) {
    if (!admin_) return net::not_found();
    // GET only, but for the moderation panel's POST: a body elsewhere is 413.
    body_limit = path == "/admin/api/moderation" ? 4096 : 0;
    return admin_->check_header(req);
  }
  const bool known = path == "/v1/publish" || path == "/v1/send" || path == "/v1/history" ||
                     path == "/v1/presence" || path.starts_with(kEventsPath) ||
                     path.starts_with(kBoardsPath) || is_moderation_path(path) ||
                     is_sanction_path(path);
  if (!known) return net::not_found();
  const TenantRuntime* t = tenant_of(req);
  if (!t) {
    metrics_.local().reject(ErrorCode::kUnauthorized);
    return error_response(Error{ErrorCode::kUnauthorized, "missing or unknown api key"});
  }
  protocol::DecodeLimits limits;
  limits.max_message_bytes = t->config().max_message_bytes;
  body_limit = std::min(body_limit, protocol::hard_frame_limit(limits));
  return std::nullopt;
}

void HttpApi::handle(const net::HttpRequest& req, unsigned loop, Respond respond) {
  const std::string_view target = req.target();
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  const auto method = req.method();

  if (path == "/healthz" && method == http::verb::get) {
    if (draining_.load()) return respond({503, "application/json", R"({"status":"draining"})"});
    // A node whose store refuses appends is not healthy: a load balancer should send
    // publishers elsewhere, though reads and connections still work here.
    if (const store::StoreHealth h = stores_.durable->health(); !h.writable) {
      std::string body;
      JsonWriter(body)
          .begin_object()
          .field("status", "store_refusing_writes")
          .field("reason", h.reason)
          .field_num("since_ms", h.since_ms)
          .end_object();
      return respond({503, "application/json", std::move(body)});
    } else if (h.damaged_files > 0) {
      // Damaged files found while intact channels still work: an operator must
      // look (docs/operations.md "Damaged data"), a silent 200 would hide it.
      std::string body;
      JsonWriter(body)
          .begin_object()
          .field("status", "store_damaged")
          .field("reason", h.reason)
          .field_num("files", h.damaged_files)
          .end_object();
      return respond({503, "application/json", std::move(body)});
    } else if (!h.degraded.empty()) {
      // A shared store answering for part of its data: still serving (a load
      // balancer keeps sending clients), the channels of these parts fail
      // `unavailable` until their masters answer.
      std::string body;
      JsonWriter w(body);
      w.begin_object().field("status", "degraded").key("partitions").begin_array();
      for (const auto& part : h.degraded) w.str(part);
      w.end_array().field_unum("unavailable", h.degraded_count).end_object();
      return respond({200, "application/json", std::move(body)});
    }
    return respond({200, "application/json", R"({"status":"ok"})"});
  }
  if (path == "/metrics" && method == http::verb::get) {
    return respond({200, "text/plain; version=0.0.4", metrics_.render()});
  }
  if (AdminApi::is_admin_path(path)) {
    if (!admin_) return respond(net::not_found());
    return admin_->handle(req, loop, std::move(respond));
  }
  const bool known = path == "/v1/publish" || path == "/v1/send" || path == "/v1/history" ||
                     path == "/v1/presence" || path.starts_with(kEventsPath) ||
                     path.starts_with(kBoardsPath) || is_moderation_path(path) ||
                     is_sanction_path(path);
  if (!known) return respond(net::not_found());

  const TenantRuntime* t = tenant_of(req);
  if (!t) {
    metrics_.local().reject(ErrorCode::kUnauthorized);
    return respond(error_response(Error{ErrorCode::kUnauthorized, "missing or unknown api key"}));
  }
  const bool post = method == http::verb::post;
  const bool get = method == http::verb::get;
  if (path == "/v1/publish" && post) return publish(*t, req, loop, std::move(respond));
  if (path == "/v1/send" && post) return send(*t, req, loop, std::move(respond));
  if (path == "/v1/history" && get) return history(*t, query, loop, std::move(respond));
  if (path == "/v1/presence" && get) return presence(*t, query, loop, std::move(respond));
  if (is_moderation_path(path) && post) return moderate(*t, path, req, loop, std::move(respond));
  if (path.starts_with(kEventsPath) && post) {
    return emit(*t, path.substr(kEventsPath.size()), req, loop, std::move(respond));
  }
  if (path.starts_with(kBoardsPath) && get) {
    return board(*t, path.substr(kBoardsPath.size()), query, loop, std::move(respond));
  }
  if (is_sanction_path(path)) return sanction(*t, path, req, query, loop, std::move(respond));
  respond(error_response(405, ErrorCode::kBadRequest, "method not allowed"));
}

void HttpApi::publish(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
                      Respond respond) {
  const int64_t arrived = steady_ns();
  if (protocol::is_api_batch(req.body())) return publish_batch(t, req, loop, std::move(respond));
  auto parsed = parse_post(req.body(), protocol::ApiPostKind::kPublish, t.config().max_message_bytes);
  if (auto* e = std::get_if<Error>(&parsed)) return respond(error_response(*e));
  auto& f = std::get<protocol::ApiPost>(parsed);
  if (int wait = const_cast<TenantRuntime&>(t).publish_bucket.take(arrived)) {
    metrics_.local().reject(ErrorCode::kRateLimited);
    const_cast<TenantRuntime&>(t).reject(ErrorCode::kRateLimited);
    return respond(error_response(Error{ErrorCode::kRateLimited, "publish rate exceeded", wait}));
  }
  hub::PublishRequest p;
  p.tenant = &t.config();
  p.ch = std::move(f.ch);
  p.from = std::string(protocol::kServerUser);
  p.id = std::move(f.id);
  p.body = std::move(f.body);
  p.arrived_ns = arrived;
  p.reply_loop = loop;
  auto* rt = const_cast<TenantRuntime*>(&t);
  p.done = [respond = std::move(respond), rt, this](store::AppendOutcome out) {
    if (!out) {
      metrics_.local().reject(out.error().code);
      rt->reject(out.error().code);
      return respond(error_response(out.error()));
    }
    if (!out->dup) rt->messages.fetch_add(1, std::memory_order_relaxed);
    std::string body;
    JsonWriter(body).begin_object().field_unum("seq", out->seq).field_bool("dup", out->dup).end_object();
    respond({200, "application/json", std::move(body)});
  };
  hub_.publish(std::move(p));
}

// A batch is published element by element in array order, from this loop, as a
// connection's pipelined pubs are: messages of one channel get seqs in that order.
// Each element takes its own token from the tenant's publish rate and gets its own
// answer ({"seq","dup"} or an error object) in its slot.
void HttpApi::publish_batch(const TenantRuntime& t, const net::HttpRequest& req,
                            unsigned loop, Respond respond) {
  const int64_t arrived = steady_ns();
  protocol::DecodeLimits limits;
  limits.max_message_bytes = t.config().max_message_bytes;
  auto parsed = protocol::decode_api_post_batch(req.body(), protocol::ApiPostKind::kPublish, limits);
  if (auto* e = std::get_if<Error>(&parsed)) return respond(error_response(*e));
  auto& posts = std::get<std::vector<protocol::ApiPost>>(parsed);
  auto answer = std::make_shared<BatchAnswer>(posts.size(), std::move(respond));
  auto* rt = const_cast<TenantRuntime*>(&t);
  for (size_t i = 0; i < posts.size(); ++i) {
    if (int wait = rt->publish_bucket.take(arrived)) {
      metrics_.local().reject(ErrorCode::kRateLimited);
      rt->reject(ErrorCode::kRateLimited);
      answer->fill(i, error_json(Error{ErrorCode::kRateLimited, "publish rate exceeded", wait}));
      continue;
    }
    hub::PublishRequest p;
    p.tenant = &t.config();
    p.ch = std::move(posts[i].ch);
    p.from = std::string(protocol::kServerUser);
    p.id = std::move(posts[i].id);
    p.body = std::move(posts[i].body);
    p.arrived_ns = arrived;
    p.reply_loop = loop;
    p.done = [answer, i, rt, this](store::AppendOutcome out) {
      if (!out) {
        metrics_.local().reject(out.error().code);
        rt->reject(out.error().code);
        return answer->fill(i, error_json(out.error()));
      }
      if (!out->dup) rt->messages.fetch_add(1, std::memory_order_relaxed);
      std::string body;
      JsonWriter(body).begin_object().field_unum("seq", out->seq).field_bool("dup", out->dup).end_object();
      answer->fill(i, std::move(body));
    };
    hub_.publish(std::move(p));
  }
}

// Each element is sent as a single /v1/send would be; its slot answers
// {"delivered":N} (or bad_request for a malformed conn id).
void HttpApi::send_batch(const TenantRuntime& t, const net::HttpRequest& req,
                         unsigned loop, Respond respond) {
  protocol::DecodeLimits limits;
  limits.max_message_bytes = t.config().max_message_bytes;
  auto parsed = protocol::decode_api_post_batch(req.body(), protocol::ApiPostKind::kSend, limits);
  if (auto* e = std::get_if<Error>(&parsed)) return respond(error_response(*e));
  auto& posts = std::get<std::vector<protocol::ApiPost>>(parsed);
  // Conn ids are checked before anything is sent: an invalid one fails the batch
  // as any other malformed element does.
  std::vector<std::optional<uint64_t>> conns(posts.size());
  for (size_t i = 0; i < posts.size(); ++i) {
    if (posts[i].conn.empty()) continue;
    conns[i] = hub::parse_connection_name(posts[i].conn);
    if (!conns[i]) {
      return respond(bad("[" + std::to_string(i) + "]: conn must be a connection id as welcome gives it"));
    }
  }
  auto answer = std::make_shared<BatchAnswer>(posts.size(), std::move(respond));
  for (size_t i = 0; i < posts.size(); ++i) {
    auto done = [answer, i](size_t n) {
      std::string body;
      JsonWriter(body).begin_object().field_unum("delivered", n).end_object();
      answer->fill(i, std::move(body));
    };
    if (!conns[i]) {
      gateway_.send_direct(&t, std::move(posts[i].user), std::move(posts[i].body), loop, std::move(done));
    } else {
      gateway_.send_direct_to_conn(&t, *conns[i], std::move(posts[i].body), loop, std::move(done));
    }
  }
}

void HttpApi::send(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
                   Respond respond) {
  if (protocol::is_api_batch(req.body())) return send_batch(t, req, loop, std::move(respond));
  auto parsed = parse_post(req.body(), protocol::ApiPostKind::kSend, t.config().max_message_bytes);
  if (auto* e = std::get_if<Error>(&parsed)) return respond(error_response(*e));
  auto& f = std::get<protocol::ApiPost>(parsed);
  std::optional<uint64_t> conn;
  if (!f.conn.empty()) {
    conn = hub::parse_connection_name(f.conn);
    if (!conn) return respond(bad("conn must be a connection id as welcome gives it"));
  }
  auto answer = [respond = std::move(respond)](size_t n) {
    std::string body;
    JsonWriter(body).begin_object().field_unum("delivered", n).end_object();
    respond({200, "application/json", std::move(body)});
  };
  if (!conn) {
    return gateway_.send_direct(&t, std::move(f.user), std::move(f.body), loop, std::move(answer));
  }
  gateway_.send_direct_to_conn(&t, *conn, std::move(f.body), loop, std::move(answer));
}

void HttpApi::history(const TenantRuntime& t, std::string_view query, unsigned loop,
                      Respond respond) {
  auto ch = query_param(query, "ch");
  if (!ch || !protocol::is_valid_channel(*ch)) return respond(bad("bad channel name"));
  auto after_s = query_param(query, "after");
  auto before_s = query_param(query, "before");
  if (after_s.has_value() == before_s.has_value()) {
    return respond(bad("exactly one of after and before is required"));
  }
  auto bound = parse_u64(after_s ? *after_s : *before_s);
  if (!bound) return respond(bad("after/before must be a non-negative integer"));
  uint32_t limit = protocol::kHistoryDefaultLimit;
  if (auto l = query_param(query, "limit")) {
    auto v = parse_u64(*l);
    if (!v || *v == 0) return respond(bad("limit must be a positive integer"));
    limit = static_cast<uint32_t>(std::min<uint64_t>(*v, protocol::kHistoryMaxLimit));
  }
  hub::HistoryRequest h;
  h.tenant = &t.config();
  h.ch = std::move(*ch);
  (after_s ? h.after : h.before) = *bound;
  h.limit = limit;
  h.max_bytes = hub::history_reply_budget(t.config());
  h.reply_loop = loop;
  h.done = [respond = std::move(respond)](hub::HistoryResult r) {
    if (!r.status) return respond(error_response(r.status.error()));
    std::string body;
    protocol::encode_history_body(body, r.msgs_json);
    respond({200, "application/json", std::move(body)});
  };
  hub_.history(std::move(h));
}

void HttpApi::presence(const TenantRuntime& t, std::string_view query, unsigned loop,
                       Respond respond) {
  auto ch = query_param(query, "ch");
  if (!ch || !protocol::is_valid_channel(*ch)) return respond(bad("bad channel name"));
  hub_.members(&t.config(), *ch, loop, [respond = std::move(respond)](std::vector<std::string> users) {
    std::string body;
    JsonWriter w(body);
    w.begin_object().key("members").begin_array();
    for (const auto& u : users) w.str(u);
    w.end_array().end_object();
    respond({200, "application/json", std::move(body)});
  });
}

void HttpApi::sanction(const TenantRuntime& t, std::string_view path, const net::HttpRequest& req,
                       std::string_view query, unsigned loop, Respond respond) {
  session::Moderation* m = gateway_.moderation();
  if (!m) return respond(net::not_found());
  const auto method = req.method();
  if (path == "/v1/moderation") {
    if (method != http::verb::get) return respond(error_response(405, ErrorCode::kBadRequest, "method not allowed"));
    const std::string user = query_param(query, "user").value_or("");
    return respond({200, "application/json", sanctions_json(m->list(t.id, wall_ms()), user, false)});
  }
  if (method != http::verb::post) return respond(error_response(405, ErrorCode::kBadRequest, "method not allowed"));
  const ModerationAction action = path == "/v1/mute"  ? ModerationAction::kMute
                                  : path == "/v1/ban" ? ModerationAction::kBan
                                                      : ModerationAction::kKick;
  auto parsed = parse_moderation(req.body(), action);
  if (auto* e = std::get_if<Error>(&parsed)) {
    metrics_.local().reject(e->code);
    return respond(error_response(*e));
  }
  auto& op = std::get<ModerationOp>(parsed);
  op.tenant = t.id;
  run_moderation(*m, std::move(op), t.config().max_sanctions, loop, std::move(respond));
}

void HttpApi::emit(const TenantRuntime& t, std::string_view topic,
                   const net::HttpRequest& req, unsigned loop, Respond respond) {
  const int64_t arrived = steady_ns();
  const TenantConfig& cfg = t.config();
  auto* rt = const_cast<TenantRuntime*>(&t);
  auto fail = [&](const Error& e) {
    metrics_.local().reject(e.code);
    rt->reject(e.code);
    respond(error_response(e));
  };
  if (!cfg.topic(topic) || !gateway_.events()) return fail(Error{ErrorCode::kNotFound, "unknown topic"});
  // The body {"events":[...]} is decoded exactly as an `emit` frame: the op
  // and topic are put in front of its members.
  const std::string_view body = req.body();
  const size_t open = body.find_first_not_of(" \t\r\n");
  if (open == std::string_view::npos || body[open] != '{') {
    return fail(Error{ErrorCode::kBadRequest, "body must be a JSON object"});
  }
  std::string frame = R"({"op":"emit","topic":)";
  append_json_string(frame, topic);
  const size_t rest = body.find_first_not_of(" \t\r\n", open + 1);
  if (rest != std::string_view::npos && body[rest] != '}') frame.push_back(',');
  frame.append(body.substr(open + 1));
  protocol::DecodeLimits limits;
  limits.max_message_bytes = cfg.max_message_bytes + static_cast<uint32_t>(frame.size() - body.size());
  auto decoded = protocol::decode_client_op(frame, limits);
  if (auto* f = std::get_if<protocol::DecodeFailure>(&decoded)) return fail(f->error);
  auto& op = std::get<protocol::ClientOp>(decoded);
  if (op.kind != protocol::OpKind::kEmit) return fail(Error{ErrorCode::kBadRequest, "not an emit"});
  if (int wait = rt->events_bucket.take(arrived, static_cast<uint32_t>(op.events.size()))) {
    return fail(Error{ErrorCode::kRateLimited, "event rate exceeded", wait});
  }
  events::EmitRequest e;
  e.tenant = &cfg;
  e.topic = std::string(topic);
  e.from = std::string(protocol::kServerUser);
  e.events = std::move(op.events);
  e.arrived_ns = arrived;
  e.reply_loop = loop;
  e.done = [respond = std::move(respond), rt, this](events::EmitOutcome out) {
    if (!out.status) {
      metrics_.local().reject(out.status.error().code);
      rt->reject(out.status.error().code);
      return respond(error_response(out.status.error()));
    }
    std::string body;
    JsonWriter w(body);
    w.begin_object().key("offs").begin_array();
    for (const auto& [p, off] : out.offs) w.begin_array().unum(p).unum(off).end_array();
    w.end_array().key("dup").begin_array();
    for (bool d : out.dup) w.boolean(d);
    w.end_array().end_object();
    respond({200, "application/json", std::move(body)});
  };
  gateway_.events()->emit(std::move(e));
}

void HttpApi::board(const TenantRuntime& t, std::string_view name, std::string_view query,
                    unsigned loop, Respond respond) {
  const TenantConfig& cfg = t.config();
  auto it = cfg.leaderboards.find(name);
  if (it == cfg.leaderboards.end() || !gateway_.events()) {
    return respond(error_response(Error{ErrorCode::kNotFound, "unknown board"}));
  }
  events::RankRequest r;
  r.tenant = &cfg;
  r.board = std::string(name);
  r.top = it->second.top;
  if (auto top = query_param(query, "top")) {
    auto v = parse_u64(*top);
    if (!v || *v == 0) return respond(bad("top must be a positive integer"));
    r.top = static_cast<uint32_t>(std::min<uint64_t>(*v, 1000));
  }
  if (auto m = query_param(query, "around")) {
    if (m->empty() || m->size() > protocol::kMaxEventNameLength) return respond(bad("bad member"));
    r.member = std::move(*m);
  }
  r.around = protocol::kDefaultRankAround;
  if (auto round = query_param(query, "round")) {
    if (round->empty() || round->size() > protocol::kMaxEventNameLength) return respond(bad("bad round"));
    r.round = std::move(*round);
  }
  r.reply_loop = loop;
  r.done = [respond = std::move(respond)](Status st, std::vector<events::RankEntry> top,
                                          std::vector<events::RankEntry> entries) {
    if (!st) return respond(error_response(st.error()));
    auto list = [](const std::vector<events::RankEntry>& in, std::string& out) {
      std::vector<protocol::RankView> v;
      for (const auto& e : in) v.push_back({e.member, e.score, e.rank});
      protocol::append_rank_list(out, v);
    };
    std::string body = R"({"top":)";
    list(top, body);
    body += R"(,"entries":)";
    list(entries, body);
    body.push_back('}');
    respond({200, "application/json", std::move(body)});
  };
  gateway_.events()->rank(std::move(r));
}

}  // namespace parley::api
