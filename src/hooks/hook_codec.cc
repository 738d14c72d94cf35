#include "hooks/hook_codec.h"

#include <simdjson.h>

#include <array>
#include <optional>

#include "common/json_writer.h"
#include "hub/upstream_sink.h"

namespace parley::hooks {

namespace {
Error bad_answer(std::string msg) { return Error{ErrorCode::kInternal, std::move(msg)}; }

// The codes an app server may deny with: those a client already knows from
// PROTOCOL.md "Errors", less the ones that only the server can mean.
constexpr std::array kDenyCodes = {
    ErrorCode::kBadRequest,    ErrorCode::kUnauthorized, ErrorCode::kForbidden,
    ErrorCode::kTooLarge,      ErrorCode::kRateLimited,  ErrorCode::kBackpressure,
    ErrorCode::kQuotaExceeded, ErrorCode::kUnavailable,  ErrorCode::kNotFound,
};
constexpr int64_t kMaxRetryMs = 3'600'000;
}  // namespace

std::string_view hook_name(session::HookKind kind) {
  switch (kind) {
    case session::HookKind::kConnect: return "connect";
    case session::HookKind::kJoin: return "join";
    case session::HookKind::kPub: return "pub";
  }
  return "join";
}

std::string encode_hook_request(const session::HookAsk& ask, int64_t ts_ms) {
  std::string out;
  out.reserve(160 + ask.body.size());
  JsonWriter w(out);
  w.begin_object();
  w.field("hook", hook_name(ask.kind));
  w.field("tenant", ask.tenant ? std::string_view(ask.tenant->id) : std::string_view());
  if (ask.kind != session::HookKind::kConnect) {
    w.field("ns", ask.ns);
    w.field("ch", ask.ch);
  }
  w.field("user", ask.user);
  w.field("conn", hub::connection_name(ask.conn));
  w.field_num("ts", ts_ms);
  if (ask.kind == session::HookKind::kJoin && ask.since) w.field_unum("since", *ask.since);
  if (ask.kind == session::HookKind::kPub) {
    w.field("id", ask.id);
    w.field_raw("body", ask.body.empty() ? std::string_view("null") : std::string_view(ask.body));
  }
  w.end_object();
  return out;
}

namespace {
// The raw text of `obj`'s "body", minified; its value was validated by the DOM
// pass. simdjson 3.0's ondemand has raw text for objects, arrays and scalars
// but not for a value of unknown type, hence the switch.
std::optional<std::string> raw_body(const simdjson::padded_string& padded) {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::value value;
  if (parser.iterate(padded).get(doc) || doc.find_field("body").get(value)) return std::nullopt;
  simdjson::ondemand::json_type type;
  if (value.type().get(type)) return std::nullopt;
  std::string_view raw;
  simdjson::error_code err;
  if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object o;
    err = value.get_object().get(o);
    if (!err) err = o.raw_json().get(raw);
  } else if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array a;
    err = value.get_array().get(a);
    if (!err) err = a.raw_json().get(raw);
  } else {
    raw = value.raw_json_token();
    err = simdjson::SUCCESS;
  }
  if (err) return std::nullopt;
  std::string min(raw.size(), '\0');
  size_t len = 0;
  if (simdjson::minify(raw.data(), raw.size(), min.data(), len) != simdjson::SUCCESS) return std::nullopt;
  min.resize(len);
  return min;
}
}  // namespace

Result<session::HookVerdict> parse_hook_answer(std::string_view text, session::HookKind kind,
                                               size_t max_body_bytes) {
  const simdjson::padded_string padded(text);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (parser.parse(padded).get(root) || root.get_object().get(obj)) {
    return bad_answer("the answer is not a JSON object");
  }
  std::optional<bool> allow;
  std::optional<std::string> code, msg;
  std::optional<int64_t> retry_ms;
  bool has_body = false;
  for (auto [key, value] : obj) {
    if (key == "allow") {
      bool b;
      if (value.get_bool().get(b)) return bad_answer("allow must be true or false");
      allow = b;
    } else if (key == "body") {
      has_body = true;
    } else if (key == "code" || key == "msg") {
      std::string_view s;
      if (value.get_string().get(s)) return bad_answer(std::string(key) + " must be a string");
      (key == "code" ? code : msg) = std::string(s);
    } else if (key == "retry_ms") {
      int64_t n;
      if (value.get_int64().get(n) || n < 0 || n > kMaxRetryMs) {
        return bad_answer("retry_ms must be an integer from 0 to 3600000");
      }
      retry_ms = n;
    }
    // Other fields are ignored: room for later additions.
  }
  if (!allow) return bad_answer("allow is missing");
  std::optional<std::string> body;
  if (has_body && *allow) {
    if (kind != session::HookKind::kPub) return bad_answer("only a pub hook may answer a body");
    body = raw_body(padded);
    if (!body) return bad_answer("body could not be read");
  }
  session::HookVerdict v;
  v.allow = *allow;
  if (v.allow) {
    if (body) {
      if (body->size() > max_body_bytes) return bad_answer("the modified body is over max_message_bytes");
      v.body = std::move(body);
    }
    return v;
  }
  v.error.code = ErrorCode::kForbidden;
  if (code) {
    bool known = false;
    for (ErrorCode c : kDenyCodes) {
      if (wire_name(c) == *code) {
        v.error.code = c;
        known = true;
      }
    }
    if (!known) return bad_answer("code is not one a client may be given");
  }
  if (msg && msg->size() > kMaxDenyMsgBytes) return bad_answer("msg is over 256 bytes");
  v.error.msg = msg ? std::move(*msg) : "refused by the app server";
  v.error.retry_ms = static_cast<int>(retry_ms.value_or(0));
  return v;
}

}  // namespace parley::hooks
