#include "api/moderation_api.h"

#include <simdjson.h>

#include "common/clock.h"
#include "common/json_writer.h"
#include "protocol/decoder.h"
#include "protocol/identifier.h"

namespace parley::api {

namespace {

// At most a year: a longer ban is a game's own account state, not a timer.
constexpr int64_t kMaxForMs = 31'536'000'000;
constexpr size_t kMaxReasonBytes = 256;

Error bad(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }

// A string member: absent is fine (nullopt), another type is an error.
std::variant<std::optional<std::string>, Error> str_field(simdjson::dom::object& o, const char* name) {
  simdjson::dom::element el;
  if (o[name].get(el) != simdjson::SUCCESS) return std::optional<std::string>();
  std::string_view v;
  if (el.get_string().get(v) != simdjson::SUCCESS) return bad(std::string(name) + " must be a string");
  return std::optional<std::string>(std::string(v));
}

}  // namespace

std::variant<ModerationOp, Error> parse_moderation(std::string_view body,
                                                   std::optional<ModerationAction> action) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::padded_string text(body);
  if (parser.parse(text).get(root) != simdjson::SUCCESS) return bad("body is not JSON");
  simdjson::dom::object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) return bad("body must be a JSON object");
  ModerationOp op;
  std::optional<std::string> s;
  auto take = [&](const char* name) -> std::optional<Error> {
    auto r = str_field(o, name);
    if (auto* e = std::get_if<Error>(&r)) return *e;
    s = std::move(std::get<std::optional<std::string>>(r));
    return std::nullopt;
  };
  if (!action) {
    if (auto e = take("action")) return *e;
    if (!s) return bad("action is required");
    if (*s == "mute") {
      action = ModerationAction::kMute;
    } else if (*s == "ban") {
      action = ModerationAction::kBan;
    } else if (*s == "kick") {
      action = ModerationAction::kKick;
    } else {
      return bad("action must be mute, ban or kick");
    }
    if (auto e = take("tenant")) return *e;
    if (!s || s->empty()) return bad("tenant is required");
    op.tenant = std::move(*s);
  }
  op.action = *action;
  if (auto e = take("user")) return *e;
  if (!s) return bad("user is required");
  if (const auto f = protocol::id_fault(*s); f != protocol::IdFault::kNone) {
    return bad("user " + protocol::id_fault_text(f));
  }
  op.user = std::move(*s);
  if (auto e = take("ch")) return *e;
  if (s) {
    if (!protocol::is_valid_channel(*s)) return bad("bad channel name");
    op.ch = std::move(*s);
  } else if (op.action != ModerationAction::kMute) {
    return bad("ch is required");
  }
  if (op.action != ModerationAction::kKick) {
    simdjson::dom::element el;
    if (o["for_ms"].get(el) != simdjson::SUCCESS) return bad("for_ms is required");
    int64_t ms = 0;
    if (el.get_int64().get(ms) != simdjson::SUCCESS || ms < 0 || ms > kMaxForMs) {
      return bad("for_ms must be an integer from 0 to 31536000000");
    }
    op.for_ms = ms;
  }
  if (auto e = take("reason")) return *e;
  if (s) {
    if (s->size() > kMaxReasonBytes) return bad("reason must be at most 256 bytes");
    op.reason = std::move(*s);
  }
  return op;
}

void run_moderation(session::Moderation& m, ModerationOp op, uint32_t max_sanctions, unsigned loop,
                    std::function<void(net::HttpResponse)> respond) {
  auto answer = [respond](int64_t until, std::optional<size_t> kicked, bool with_until) {
    std::string body;
    JsonWriter w(body);
    w.begin_object();
    if (with_until) w.field_num("until", until);
    if (kicked) w.field_unum("kicked", *kicked);
    w.end_object();
    respond({200, "application/json", std::move(body)});
  };
  if (op.action == ModerationAction::kKick) {
    return m.kick(cluster::Kick{std::move(op.tenant), std::move(op.ch), std::move(op.user), std::move(op.reason)},
                  loop, [answer](size_t n) { answer(0, n, false); });
  }
  cluster::Sanction s;
  s.kind = op.action == ModerationAction::kMute ? cluster::SanctionKind::kMute : cluster::SanctionKind::kBan;
  s.tenant = op.tenant;
  s.ch = op.ch;
  s.user = op.user;
  s.until_ms = op.for_ms == 0 ? 0 : wall_ms() + op.for_ms;
  const int64_t until = s.until_ms;
  m.put(std::move(s), max_sanctions, loop, [&m, op = std::move(op), until, loop, answer, respond](Status st) mutable {
    if (!st) return respond(net::error_response(st.error()));
    if (op.action == ModerationAction::kMute) return answer(until, std::nullopt, true);
    if (until == 0) return answer(0, 0, true);  // a lifted ban kicks nobody
    // A ban removes the user from the channel now, too.
    std::string reason = op.reason.empty() ? "banned" : std::move(op.reason);
    m.kick(cluster::Kick{std::move(op.tenant), std::move(op.ch), std::move(op.user), std::move(reason)}, loop,
           [answer, until](size_t n) { answer(until, n, true); });
  });
}

std::string sanctions_json(const std::vector<cluster::Sanction>& all, std::string_view user,
                           bool with_tenant) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  for (const auto kind : {cluster::SanctionKind::kMute, cluster::SanctionKind::kBan}) {
    w.key(kind == cluster::SanctionKind::kMute ? "mutes" : "bans").begin_array();
    for (const auto& s : all) {
      if (s.kind != kind || (!user.empty() && s.user != user)) continue;
      w.begin_object();
      if (with_tenant) w.field("tenant", s.tenant);
      w.field("user", s.user);
      if (!s.ch.empty()) w.field("ch", s.ch);
      w.field_num("until", s.until_ms).end_object();
    }
    w.end_array();
  }
  w.end_object();
  return out;
}

}  // namespace parley::api
