#include "protocol/decoder.h"

#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include "common/json_writer.h"
#include "protocol/identifier.h"
#include "protocol/raw_member.h"

namespace parley::protocol {

namespace {

using simdjson::dom::element;

// The fields any op reads. Everything else in a frame is ignored.
enum Field : size_t {
  kOp, kRid, kV, kToken, kCh, kSince, kId, kKey, kBody, kAfter, kBefore, kLimit, kUser, kConn,
  // event streams
  kApiKey, kTopic, kEvents, kType, kP, kFrom, kGroup, kGen, kOff, kBoard, kMember, kAround,
  kRound, kPos, kEnc, kCaps, kTarget,
  kFieldCount
};
constexpr std::array<std::string_view, kFieldCount> kFieldNames = {
    "op",    "rid",   "v",      "token", "ch",   "since", "id",
    "key",   "body",  "after",  "before", "limit", "user", "conn",
    "api_key", "topic", "events", "type", "p", "from", "group", "gen", "off", "board",
    "member", "around", "round", "pos", "enc", "caps", "target"};

std::optional<Field> field_of(std::string_view name) {
  for (size_t f = 0; f < kFieldCount; ++f) {
    if (kFieldNames[f] == name) return static_cast<Field>(f);
  }
  return std::nullopt;
}

// The known fields of one frame, gathered in a single pass over the object.
struct Fields {
  std::array<element, kFieldCount> value;
  std::array<bool, kFieldCount> present{};
  std::array<bool, kFieldCount> duplicated{};
  // Index of each field among all members, for raw_member_value.
  std::array<size_t, kFieldCount> member_index{};
  std::optional<Field> first_duplicate;

  bool has(Field f) const { return present[f]; }
  const element& operator[](Field f) const { return value[f]; }
};

Fields gather(const simdjson::dom::object& obj) {
  Fields fields;
  size_t member = 0;
  for (const auto& [name, value] : obj) {
    if (const auto f = field_of(name)) {
      if (fields.present[*f]) {
        fields.duplicated[*f] = true;
        if (!fields.first_duplicate) fields.first_duplicate = *f;
      } else {
        fields.present[*f] = true;
        fields.value[*f] = value;
        fields.member_index[*f] = member;
      }
    }
    ++member;
  }
  return fields;
}

Error bad_request(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }

std::string field_msg(Field f, std::string_view what) {
  std::string msg(kFieldNames[f]);
  msg += ' ';
  msg += what;
  return msg;
}

Error missing(Field f) { return bad_request("missing " + std::string(kFieldNames[f])); }

Error too_large(std::string_view what, size_t limit) {
  return Error{ErrorCode::kTooLarge,
               std::string(what) + " exceeds max_message_bytes (" + std::to_string(limit) + ")"};
}

void append_integer(std::string& out, auto v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// rid: an integer (any sign) or a string of at most kMaxIdChars chars, re-encoded as JSON.
std::optional<Error> read_rid(const Fields& fields, std::string& rid) {
  static const std::string kMsg =
      "rid must be an integer or a string of at most " + std::to_string(kMaxIdChars) + " chars";
  if (!fields.has(kRid)) return std::nullopt;
  const element& e = fields[kRid];
  switch (e.type()) {
    case simdjson::dom::element_type::INT64: {
      int64_t v = 0;
      if (e.get_int64().get(v)) return bad_request(kMsg);
      append_integer(rid, v);
      return std::nullopt;
    }
    case simdjson::dom::element_type::UINT64: {
      uint64_t v = 0;
      if (e.get_uint64().get(v)) return bad_request(kMsg);
      append_integer(rid, v);
      return std::nullopt;
    }
    case simdjson::dom::element_type::STRING: {
      std::string_view s;
      if (e.get_string().get(s) || code_points(s) > kMaxIdChars) return bad_request(kMsg);
      append_json_string(rid, s);
      return std::nullopt;
    }
    default:
      return bad_request(kMsg);
  }
}

std::optional<Error> read_string(const Fields& fields, Field f, std::string& out) {
  if (!fields.has(f)) return missing(f);
  std::string_view s;
  if (fields[f].get_string().get(s)) return bad_request(field_msg(f, "must be a string"));
  out.assign(s);
  return std::nullopt;
}

// A client-chosen identifier (pub id, state key, group, user): identifier.h's rule.
std::optional<Error> read_id(const Fields& fields, Field f, std::string& out) {
  if (!fields.has(f)) return missing(f);
  std::string_view s;
  const IdFault fault = fields[f].get_string().get(s) ? IdFault::kLength : id_fault(s);
  if (fault != IdFault::kNone) return bad_request(field_msg(f, id_fault_text(fault)));
  out.assign(s);
  return std::nullopt;
}

std::optional<Error> read_channel(const Fields& fields, std::string& ch) {
  if (!fields.has(kCh)) return missing(kCh);
  std::string_view s;
  if (fields[kCh].get_string().get(s)) return bad_request("ch must be a string");
  if (!is_valid_channel(s)) return bad_request("bad channel name");
  ch.assign(s);
  return std::nullopt;
}

// A seq: an integer in [0, 2^63-1]. simdjson types larger ones as uint64, which
// get_int64 refuses, and floats as double, which it refuses too.
std::optional<Error> read_seq(const Fields& fields, Field f, std::optional<uint64_t>& out) {
  if (!fields.has(f)) return std::nullopt;
  int64_t v = 0;
  if (fields[f].get_int64().get(v) || v < 0) {
    return bad_request(field_msg(f, "must be a non-negative integer"));
  }
  out = static_cast<uint64_t>(v);
  return std::nullopt;
}

// edit / delete (and their HTTP bodies): `target`, the seq of a message, 1..2^63-1.
std::optional<Error> read_target(const Fields& fields, uint64_t& out) {
  if (!fields.has(kTarget)) return missing(kTarget);
  int64_t v = 0;
  if (fields[kTarget].get_int64().get(v) || v < 1) {
    return bad_request(field_msg(kTarget, "must be a positive integer"));
  }
  out = static_cast<uint64_t>(v);
  return std::nullopt;
}

std::optional<Error> read_limit(const Fields& fields, uint32_t& limit) {
  limit = kHistoryDefaultLimit;
  if (!fields.has(kLimit)) return std::nullopt;
  // Any positive integer, beyond int64 too: all larger than the max cap to it.
  uint64_t v = 0;
  if (!fields[kLimit].get_uint64().get(v) && v > 0) {
    limit = v > kHistoryMaxLimit ? kHistoryMaxLimit : static_cast<uint32_t>(v);
    return std::nullopt;
  }
  return bad_request("limit must be a positive integer");
}

// The body's original text, minified. Its raw span is found again in `frame`
// because the DOM cannot say where it was (see raw_member.h).
// `arrived`: the body's size in the encoding it arrived in, when not this JSON.
std::optional<Error> read_body(const Fields& fields, std::string_view frame,
                               const DecodeLimits& limits, std::string& body,
                               size_t arrived = ArrivedSizes::kUnknown) {
  if (!fields.has(kBody)) return missing(kBody);
  const auto raw = raw_member_value(frame, fields.member_index[kBody]);
  if (!raw) return Error{ErrorCode::kInternal, "body not found in a validated frame"};
  body.resize(raw->size());
  size_t len = 0;
  if (simdjson::minify(raw->data(), raw->size(), body.data(), len) != simdjson::SUCCESS) {
    return Error{ErrorCode::kInternal, "minifying a validated body failed"};
  }
  body.resize(len);
  // Implied by the frame check today (the body is part of the frame and
  // minifying only shrinks it), but it is the rule PROTOCOL.md states.
  if ((arrived != ArrivedSizes::kUnknown ? arrived : body.size()) > limits.max_message_bytes) {
    return too_large("body", limits.max_message_bytes);
  }
  return std::nullopt;
}

std::optional<Error> read_hello(const Fields& fields, ClientOp& op) {
  // PROTOCOL.md: "v other than 1 gets bad_request and close 4002" (version.h).
  // A missing or non-integer v is another one too, so it decodes as v = 0 and
  // the session, not the decoder, answers every unsupported version alike.
  if (!fields.has(kV) || fields[kV].get_int64().get(op.v)) op.v = 0;
  if (fields.has(kApiKey)) {
    if (fields.has(kToken)) return bad_request("hello takes token or api_key, not both");
    if (auto e = read_string(fields, kApiKey, op.api_key)) return e;
    if (op.api_key.empty()) return bad_request("api_key must not be empty");
  } else if (auto e = read_string(fields, kToken, op.token)) {
    return e;
  }
  // PROTOCOL.md "Binary encoding": a value this server does not know is
  // answered by the session (bad_request, the connection stays in JSON).
  std::string_view enc = "json";
  if (fields.has(kEnc) && fields[kEnc].get_string().get(enc)) enc = {};
  op.enc = enc == "msgpack" ? Encoding::kMsgpack : Encoding::kJson;
  op.enc_unsupported = enc != "msgpack" && enc != "json";
  // PROTOCOL.md "State deltas": capabilities, unknown names ignored.
  if (fields.has(kCaps)) {
    simdjson::dom::array caps;
    if (fields[kCaps].get_array().get(caps)) return bad_request("caps must be an array of strings");
    for (auto c : caps) {
      std::string_view name;
      if (c.get_string().get(name)) return bad_request("caps must be an array of strings");
      if (name == "state_delta") op.cap_state_delta = true;
      if (name == "state_delta_batch") op.cap_state_delta_batch = true;
    }
  }
  return std::nullopt;
}

std::optional<Error> read_history(const Fields& fields, ClientOp& op) {
  if (auto e = read_channel(fields, op.ch)) return e;
  if (fields.has(kAfter) == fields.has(kBefore)) {
    return bad_request("history needs exactly one of after and before");
  }
  if (auto e = read_seq(fields, kAfter, op.after)) return e;
  if (auto e = read_seq(fields, kBefore, op.before)) return e;
  return read_limit(fields, op.limit);
}

// A topic name: the channel-name rules (PROTOCOL.md).
std::optional<Error> read_topic(const Fields& fields, std::string& topic) {
  if (!fields.has(kTopic)) return missing(kTopic);
  std::string_view s;
  if (fields[kTopic].get_string().get(s)) return bad_request("topic must be a string");
  if (!is_valid_channel(s)) return bad_request("bad topic name");
  topic.assign(s);
  return std::nullopt;
}

// An event's key or type, a board's member: 1-128 chars, no control characters.
std::optional<Error> read_name(const Fields& fields, Field f, std::string& out,
                               std::string_view where = {}) {
  if (!fields.has(f)) return bad_request(std::string(where) + "missing " + std::string(kFieldNames[f]));
  std::string_view s;
  if (fields[f].get_string().get(s) || s.empty() || code_points(s) > kMaxEventNameLength) {
    return bad_request(std::string(where) + field_msg(f, "must be a string of 1-128 chars"));
  }
  if (has_control_chars(s)) {
    return bad_request(std::string(where) + field_msg(f, "must not contain control characters"));
  }
  out.assign(s);
  return std::nullopt;
}

// A non-negative integer up to 2^63-1 (an offset or generation), required.
std::optional<Error> read_count(const Fields& fields, Field f, uint64_t& out) {
  if (!fields.has(f)) return missing(f);
  std::optional<uint64_t> v;
  if (auto e = read_seq(fields, f, v)) return e;
  out = *v;
  return std::nullopt;
}

std::optional<Error> read_partition(const Fields& fields, std::optional<uint32_t>& p) {
  if (!fields.has(kP)) return std::nullopt;
  int64_t v = 0;
  if (fields[kP].get_int64().get(v) || v < 0 || v > 0xFFFFFFFFll) {
    return bad_request("p must be a non-negative integer");
  }
  p = static_cast<uint32_t>(v);
  return std::nullopt;
}

// `events` of an emit: 1-1000 objects {key, type, body, id?}. One invalid event
// fails the whole emit (PROTOCOL.md), and the message says which one.
std::optional<Error> read_events(const Fields& fields, std::string_view frame,
                                 const DecodeLimits& limits, const ArrivedSizes* arrived,
                                 std::vector<EmitEvent>& out) {
  if (!fields.has(kEvents)) return missing(kEvents);
  simdjson::dom::array arr;
  if (fields[kEvents].get_array().get(arr)) return bad_request("events must be an array");
  const size_t n = arr.size();
  if (n == 0 || n > kMaxEmitEvents) return bad_request("events must hold 1-1000 events");
  const auto raw_events = raw_member_value(frame, fields.member_index[kEvents]);
  thread_local std::vector<std::string_view> raw;
  if (!raw_events || !raw_array_elements(*raw_events, raw) || raw.size() != n) {
    return Error{ErrorCode::kInternal, "events not found in a validated frame"};
  }
  out.clear();
  out.reserve(n);
  size_t i = 0;
  for (element el : arr) {
    const std::string where = "events[" + std::to_string(i) + "]: ";
    simdjson::dom::object obj;
    if (el.get_object().get(obj)) return bad_request(where + "an event must be an object");
    const Fields ev = gather(obj);
    for (Field f : {kKey, kType, kBody, kId}) {
      if (ev.duplicated[f]) return bad_request(where + "duplicate field " + std::string(kFieldNames[f]));
    }
    EmitEvent e;
    if (auto err = read_name(ev, kKey, e.key, where)) return err;
    if (auto err = read_name(ev, kType, e.type, where)) return err;
    if (ev.has(kId)) {
      if (auto err = read_id(ev, kId, e.id)) return bad_request(where + err->msg);
    }
    const size_t size = arrived && i < arrived->event_bodies.size() ? arrived->event_bodies[i]
                                                                    : ArrivedSizes::kUnknown;
    if (auto err = read_body(ev, raw[i], limits, e.body, size)) {
      if (err->code == ErrorCode::kBadRequest) return bad_request(where + err->msg);
      return err;
    }
    out.push_back(std::move(e));
    ++i;
  }
  return std::nullopt;
}

std::optional<Error> read_tail(const Fields& fields, ClientOp& op) {
  if (auto e = read_topic(fields, op.topic)) return e;
  if (auto e = read_partition(fields, op.p)) return e;
  op.from = TailFrom::kLatest;
  if (!fields.has(kFrom)) return std::nullopt;
  std::string_view s;
  if (!fields[kFrom].get_string().get(s)) {
    if (s == "earliest") {
      op.from = TailFrom::kEarliest;
    } else if (s != "latest") {
      return bad_request("from must be an offset, \"earliest\" or \"latest\"");
    }
    return std::nullopt;
  }
  std::optional<uint64_t> off;
  if (read_seq(fields, kFrom, off)) {
    return bad_request("from must be an offset, \"earliest\" or \"latest\"");
  }
  op.from = TailFrom::kOffset;
  op.from_off = *off;
  return std::nullopt;
}

std::optional<Error> read_commit(const Fields& fields, ClientOp& op) {
  if (auto e = read_topic(fields, op.topic)) return e;
  if (auto e = read_id(fields, kGroup, op.group)) return e;
  if (auto e = read_count(fields, kGen, op.gen)) return e;
  if (!fields.has(kP)) return missing(kP);
  if (auto e = read_partition(fields, op.p)) return e;
  return read_count(fields, kOff, op.off);
}

// A round: a string, or an integer (numeric rounds become strings, PROTOCOL.md).
std::optional<Error> read_round(const Fields& fields, std::optional<std::string>& round) {
  if (!fields.has(kRound)) return std::nullopt;
  std::string_view s;
  int64_t i = 0;
  if (!fields[kRound].get_string().get(s)) {
    if (s.empty() || code_points(s) > kMaxEventNameLength || has_control_chars(s)) {
      return bad_request("round must be a string of 1-128 chars or an integer");
    }
    round.emplace(s);
  } else if (!fields[kRound].get_int64().get(i)) {
    round.emplace(std::to_string(i));
  } else {
    return bad_request("round must be a string of 1-128 chars or an integer");
  }
  return std::nullopt;
}

std::optional<Error> read_rank(const Fields& fields, ClientOp& op) {
  if (!fields.has(kBoard)) return missing(kBoard);
  std::string_view board;
  if (fields[kBoard].get_string().get(board)) return bad_request("board must be a string");
  if (!is_valid_channel(board)) return bad_request("bad board name");
  op.board.assign(board);
  if (auto e = read_name(fields, kMember, op.member)) return e;
  op.around = kDefaultRankAround;
  if (fields.has(kAround)) {
    uint64_t v = 0;
    if (fields[kAround].get_uint64().get(v)) return bad_request("around must be a non-negative integer");
    op.around = v > kMaxRankAround ? kMaxRankAround : static_cast<uint32_t>(v);
  }
  return read_round(fields, op.round);
}

// pos: [x, y] or [x, y, z], finite numbers of at most kMaxPositionMagnitude.
std::optional<Error> read_pos(const Fields& fields, std::optional<Position>& out) {
  static const std::string kMsg = "pos must be an array of 2 or 3 finite numbers";
  if (!fields.has(kPos)) return std::nullopt;
  simdjson::dom::array arr;
  if (fields[kPos].get_array().get(arr)) return bad_request(kMsg);
  Position p;
  size_t n = 0;
  for (element e : arr) {
    if (n == 3 || !e.is_number()) return bad_request(kMsg);
    double d = 0;
    if (e.get_double().get(d) || !std::isfinite(d) || std::fabs(d) > kMaxPositionMagnitude) {
      return bad_request(kMsg);
    }
    p.v[n++] = d;
  }
  if (n < 2) return bad_request(kMsg);
  p.dims = static_cast<uint8_t>(n);
  out = p;
  return std::nullopt;
}

std::optional<OpKind> op_kind(std::string_view name) {
  static constexpr std::pair<std::string_view, OpKind> kOps[] = {
      {"hello", OpKind::kHello}, {"join", OpKind::kJoin},   {"leave", OpKind::kLeave},
      {"pub", OpKind::kPub},     {"state", OpKind::kState}, {"up", OpKind::kUp},
      {"history", OpKind::kHistory}, {"ping", OpKind::kPing}, {"emit", OpKind::kEmit},
      {"tail", OpKind::kTail},   {"consume", OpKind::kConsume}, {"commit", OpKind::kCommit},
      {"rank", OpKind::kRank},   {"edit", OpKind::kEdit},   {"delete", OpKind::kDelete}};
  for (const auto& [n, kind] : kOps) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

std::optional<Error> read_op(const Fields& fields, std::string_view frame,
                             const DecodeLimits& limits, const ArrivedSizes* arrived,
                             ClientOp& op) {
  const size_t body_size = arrived ? arrived->body : ArrivedSizes::kUnknown;
  if (!fields.has(kOp)) return bad_request("missing op");
  std::string_view name;
  if (fields[kOp].get_string().get(name)) return bad_request("op must be a string");
  const auto kind = op_kind(name);
  if (!kind) return bad_request("unknown op");
  op.kind = *kind;

  switch (op.kind) {
    case OpKind::kHello:
      return read_hello(fields, op);
    case OpKind::kJoin:
      if (auto e = read_channel(fields, op.ch)) return e;
      return read_seq(fields, kSince, op.since);
    case OpKind::kLeave:
      if (fields.has(kTopic)) {
        if (fields.has(kCh)) return bad_request("leave takes ch or topic, not both");
        if (auto e = read_topic(fields, op.topic)) return e;
        if (!fields.has(kGroup)) return std::nullopt;
        return read_id(fields, kGroup, op.group);
      }
      return read_channel(fields, op.ch);
    case OpKind::kPub:
      if (auto e = read_channel(fields, op.ch)) return e;
      if (auto e = read_id(fields, kId, op.id)) return e;
      return read_body(fields, frame, limits, op.body, body_size);
    case OpKind::kState:
      if (auto e = read_channel(fields, op.ch)) return e;
      if (auto e = read_id(fields, kKey, op.key)) return e;
      if (auto e = read_pos(fields, op.pos)) return e;
      return read_body(fields, frame, limits, op.body, body_size);
    case OpKind::kUp:
      if (auto e = read_channel(fields, op.ch)) return e;
      return read_body(fields, frame, limits, op.body, body_size);
    case OpKind::kHistory:
      return read_history(fields, op);
    case OpKind::kPing:
      return std::nullopt;
    case OpKind::kEmit:
      if (auto e = read_topic(fields, op.topic)) return e;
      return read_events(fields, frame, limits, arrived, op.events);
    case OpKind::kTail:
      return read_tail(fields, op);
    case OpKind::kConsume:
      if (auto e = read_topic(fields, op.topic)) return e;
      return read_id(fields, kGroup, op.group);
    case OpKind::kCommit:
      return read_commit(fields, op);
    case OpKind::kRank:
      return read_rank(fields, op);
    case OpKind::kEdit:
      if (auto e = read_channel(fields, op.ch)) return e;
      if (auto e = read_target(fields, op.target)) return e;
      return read_body(fields, frame, limits, op.body, body_size);
    case OpKind::kDelete:
      if (auto e = read_channel(fields, op.ch)) return e;
      return read_target(fields, op.target);
  }
  return bad_request("unknown op");
}

DecodeFailure fail(Error e, std::string rid = {}) {
  return DecodeFailure{std::move(e), std::move(rid)};
}

}  // namespace

std::variant<ApiPost, Error> decode_api_post(std::string_view json, ApiPostKind kind,
                                             const DecodeLimits& limits) {
  if (json.size() > hard_frame_limit(limits)) return too_large("request", limits.max_message_bytes);
  thread_local simdjson::dom::parser parser;
  element root;
  simdjson::dom::object obj;
  if (parser.parse(json.data(), json.size()).get(root) || root.get_object().get(obj)) {
    return bad_request("body must be a JSON object");
  }
  if (json.size() > limits.max_message_bytes) return too_large("request", limits.max_message_bytes);
  const Fields fields = gather(obj);
  if (fields.first_duplicate) {
    return bad_request("duplicate field " + std::string(kFieldNames[*fields.first_duplicate]));
  }
  ApiPost post;
  if (kind == ApiPostKind::kEdit || kind == ApiPostKind::kDelete) {
    if (auto e = read_channel(fields, post.ch)) return *e;
    if (auto e = read_target(fields, post.target)) return *e;
    if (kind == ApiPostKind::kDelete) return post;
  } else if (kind == ApiPostKind::kPublish) {
    if (auto e = read_channel(fields, post.ch)) return *e;
    if (fields.has(kId)) {
      if (auto e = read_id(fields, kId, post.id)) return *e;
    }
  } else {
    // Exactly one of `user` (every connection of the user) and `conn` (one).
    if (fields.has(kUser) == fields.has(kConn)) return bad_request("exactly one of user and conn is required");
    if (fields.has(kUser)) {
      if (auto e = read_id(fields, kUser, post.user)) return *e;
    } else {
      if (auto e = read_id(fields, kConn, post.conn)) return *e;
    }
  }
  if (auto e = read_body(fields, json, limits, post.body)) return *e;
  return post;
}

bool is_api_batch(std::string_view json) {
  const size_t i = json.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && json[i] == '[';
}

std::variant<std::vector<ApiPost>, Error> decode_api_post_batch(std::string_view json,
                                                                ApiPostKind kind,
                                                                const DecodeLimits& limits) {
  if (json.size() > hard_frame_limit(limits)) return too_large("request", limits.max_message_bytes);
  // Validated whole first (the element scanner trusts its input), then each
  // element's raw text goes through the single-body decoder.
  thread_local simdjson::dom::parser parser;
  element root;
  simdjson::dom::array arr;
  if (parser.parse(json.data(), json.size()).get(root) || root.get_array().get(arr)) {
    return bad_request("body must be a JSON object or an array of them");
  }
  const size_t n = arr.size();
  if (n == 0 || n > kMaxApiBatch) return bad_request("a batch must hold 1-1000 requests");
  thread_local std::vector<std::string_view> raw;
  if (!raw_array_elements(json, raw) || raw.size() != n) {
    return Error{ErrorCode::kInternal, "batch elements not found in a validated body"};
  }
  std::vector<ApiPost> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto one = decode_api_post(raw[i], kind, limits);
    if (auto* e = std::get_if<Error>(&one)) {
      e->msg = "[" + std::to_string(i) + "]: " + e->msg;
      return std::move(*e);
    }
    out.push_back(std::move(std::get<ApiPost>(one)));
  }
  return out;
}

namespace {

std::variant<ClientOp, DecodeFailure> decode_frame(std::string_view frame,
                                                   const DecodeLimits& limits,
                                                   const ArrivedSizes* arrived) {
  const size_t size = arrived ? arrived->frame : frame.size();
  const bool oversized = size > limits.max_message_bytes;
  if (size > hard_frame_limit(limits)) {
    return fail(too_large("frame", limits.max_message_bytes));
  }

  // One parser per thread: it keeps its buffers between frames, so steady-state
  // decoding allocates nothing in simdjson. Its capacity is bounded by the
  // hard frame limit checked above.
  thread_local simdjson::dom::parser parser;
  element root;
  if (const auto err = parser.parse(frame.data(), frame.size()).get(root)) {
    if (oversized) return fail(too_large("frame", limits.max_message_bytes));
    return fail(bad_request(err == simdjson::UTF8_ERROR ? "frame is not valid UTF-8"
                                                        : "frame is not valid JSON"));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) {
    if (oversized) return fail(too_large("frame", limits.max_message_bytes));
    return fail(bad_request("frame is not a JSON object"));
  }

  const Fields fields = gather(obj);
  ClientOp op;
  const bool rid_duplicated = fields.duplicated[kRid];
  const auto rid_error = rid_duplicated ? std::nullopt : read_rid(fields, op.rid);
  const bool rid_ok = !rid_duplicated && !rid_error;
  // The size verdict beats every other one, but carries the rid when it is readable.
  if (oversized) {
    return fail(too_large("frame", limits.max_message_bytes), rid_ok ? op.rid : std::string());
  }
  if (rid_duplicated) return fail(bad_request("duplicate field rid"));
  if (rid_error) return fail(*rid_error);
  if (fields.first_duplicate) {
    return fail(bad_request("duplicate field " + std::string(kFieldNames[*fields.first_duplicate])),
                std::move(op.rid));
  }
  if (auto e = read_op(fields, frame, limits, arrived, op)) {
    return fail(std::move(*e), std::move(op.rid));
  }
  return op;
}

}  // namespace

std::variant<ClientOp, DecodeFailure> decode_client_op(std::string_view frame,
                                                       const DecodeLimits& limits) {
  return decode_frame(frame, limits, nullptr);
}

std::variant<ClientOp, DecodeFailure> decode_converted_client_op(std::string_view json,
                                                                 const DecodeLimits& limits,
                                                                 const ArrivedSizes& arrived) {
  return decode_frame(json, limits, &arrived);
}

}  // namespace parley::protocol
