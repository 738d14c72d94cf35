#include "protocol/encoder.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "common/json_writer.h"

namespace parley::protocol {

namespace {

// Starts {"op":<op>[,"rid":<rid>]; replies omit rid when the request had none.
JsonWriter& begin(JsonWriter& w, std::string_view op, std::string_view rid = {}) {
  w.begin_object().field("op", op);
  if (!rid.empty()) w.field_raw("rid", rid);
  return w;
}

void string_array(JsonWriter& w, std::string_view key, std::span<const std::string> items) {
  w.key(key).begin_array();
  for (const auto& item : items) w.str(item);
  w.end_array();
}

template <typename N>
void append_number(std::string& out, N v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Room for a frame's fixed text and widest numbers: the fields are escaped
// into it in one allocation in the usual case (no character needs escaping).
constexpr size_t kFrameOverhead = 104;

}  // namespace

namespace {

// An edit or delete event: its own seq, the message it changes, who did it.
void encode_moderation(std::string& out, const MsgView& m) {
  const bool edit = m.kind == EntryKind::kEdit;
  out.append(edit ? R"({"op":"edit","ch":)" : R"({"op":"delete","ch":)");
  append_json_string(out, m.ch);
  out.append(R"(,"seq":)");
  append_number(out, m.seq);
  out.append(R"(,"target":)");
  append_number(out, m.target);
  out.append(R"(,"from":)");
  append_json_string(out, m.from);
  out.append(R"(,"ts":)");
  append_number(out, m.ts_ms);
  if (edit) {
    out.append(R"(,"body":)");
    out.append(m.body);
  }
  out += '}';
}

}  // namespace

void encode_msg(std::string& out, const MsgView& m) {
  if (m.kind != EntryKind::kMsg) return encode_moderation(out, m);
  // The frame of every delivered message: its fixed text is appended as
  // literals rather than through JsonWriter (whose keys are escaped one by
  // one); the bytes are the same.
  out.reserve(out.size() + kFrameOverhead + m.ch.size() + m.from.size() + m.id.size() +
              m.body.size());
  out.append(R"({"op":"msg","ch":)");
  append_json_string(out, m.ch);
  out.append(R"(,"seq":)");
  append_number(out, m.seq);
  out.append(R"(,"from":)");
  append_json_string(out, m.from);
  out.append(R"(,"id":)");
  append_json_string(out, m.id);
  out.append(R"(,"ts":)");
  append_number(out, m.ts_ms);
  if (m.deleted) {
    out.append(R"(,"deleted":true})");
    return;
  }
  if (m.edited_ms != 0) {
    out.append(R"(,"edited":)");
    append_number(out, m.edited_ms);
  }
  out.append(R"(,"body":)");
  out.append(m.body);
  out += '}';
}

void encode_moderated(std::string& out, std::string_view rid, bool edit, std::string_view ch,
                      uint64_t target, uint64_t seq) {
  JsonWriter w(out);
  begin(w, edit ? "edited" : "deleted", rid)
      .field("ch", ch)
      .field_unum("target", target)
      .field_unum("seq", seq)
      .end_object();
}

void append_msg(std::string& list, const MsgView& m) {
  if (!list.empty()) list += ',';
  encode_msg(list, m);
}

void encode_batch(std::string& out, std::string_view msgs_json) {
  out.reserve(out.size() + msgs_json.size() + 2);
  out += '[';
  out += msgs_json;
  out += ']';
}

void encode_history_body(std::string& out, std::string_view msgs_json) {
  JsonWriter w(out);
  w.begin_object().key("msgs").begin_array();
  if (!msgs_json.empty()) w.raw(msgs_json);
  w.end_array().end_object();
}

void encode_state(std::string& out, std::string_view ch, std::string_view from,
                  std::string_view key, std::string_view body, const Position* pos) {
  out.reserve(out.size() + kFrameOverhead + ch.size() + from.size() + key.size() + body.size());
  JsonWriter w(out);
  begin(w, "state").field("ch", ch).field("from", from).field("key", key);
  if (pos) {
    std::string coords = "[";
    for (uint8_t i = 0; i < pos->dims; ++i) {
      if (i) coords += ',';
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, pos->v[i]);
      coords.append(buf, r.ptr);
    }
    coords += ']';
    w.field_raw("pos", coords);
  }
  w.field_raw("body", body).end_object();
}

void encode_presence(std::string& out, std::string_view ch, std::span<const std::string> join,
                     std::span<const std::string> leave) {
  JsonWriter w(out);
  begin(w, "presence").field("ch", ch);
  if (!join.empty()) string_array(w, "join", join);
  if (!leave.empty()) string_array(w, "leave", leave);
  w.end_object();
}

void encode_direct(std::string& out, std::string_view body) {
  JsonWriter w(out);
  begin(w, "direct").field("from", "server").field_raw("body", body).end_object();
}

void encode_welcome(std::string& out, std::string_view rid, std::string_view conn,
                    std::string_view user, std::string_view tenant, int heartbeat_ms,
                    bool msgpack, bool state_delta, bool state_delta_batch) {
  JsonWriter w(out);
  begin(w, "welcome", rid)
      .field("conn", conn)
      .field("user", user)
      .field("tenant", tenant)
      .field_num("heartbeat_ms", heartbeat_ms);
  if (msgpack) w.field("enc", "msgpack");
  if (state_delta) {
    w.key("caps").begin_array().str("state_delta");
    if (state_delta_batch) w.str("state_delta_batch");
    w.end_array();
  }
  w.end_object();
}

void encode_joined(std::string& out, std::string_view rid, std::string_view ch, uint64_t seq,
                   bool recovered, const std::span<const std::string>* members,
                   uint32_t epoch) {
  JsonWriter w(out);
  begin(w, "joined", rid).field("ch", ch).field_unum("seq", seq).field_bool("recovered", recovered);
  if (epoch > 1) w.field_unum("epoch", epoch);
  // Null means the namespace has no presence; an empty list means nobody is there.
  if (members != nullptr) string_array(w, "members", *members);
  w.end_object();
}

void encode_left(std::string& out, std::string_view rid, std::string_view ch) {
  JsonWriter w(out);
  begin(w, "left", rid).field("ch", ch).end_object();
}

void encode_kicked(std::string& out, std::string_view ch, std::string_view reason) {
  JsonWriter w(out);
  begin(w, "kicked").field("ch", ch).field("reason", reason).end_object();
}

void encode_ack(std::string& out, std::string_view rid, std::string_view ch, std::string_view id,
                uint64_t seq, bool dup) {
  // One per publish: literals and one allocation, as encode_msg.
  out.reserve(out.size() + kFrameOverhead + rid.size() + ch.size() + id.size());
  out.append(R"({"op":"ack")");
  if (!rid.empty()) {
    out.append(R"(,"rid":)");
    out.append(rid);
  }
  out.append(R"(,"ch":)");
  append_json_string(out, ch);
  out.append(R"(,"id":)");
  append_json_string(out, id);
  out.append(R"(,"seq":)");
  append_number(out, seq);
  out.append(dup ? R"(,"dup":true})" : R"(,"dup":false})");
}

void encode_history(std::string& out, std::string_view rid, std::string_view ch,
                    std::string_view msgs_json) {
  JsonWriter w(out);
  begin(w, "history", rid).field("ch", ch).key("msgs").begin_array();
  if (!msgs_json.empty()) w.raw(msgs_json);
  w.end_array().end_object();
}

void encode_pong(std::string& out, std::string_view rid, int64_t ts_ms) {
  JsonWriter w(out);
  begin(w, "pong", rid).field_num("ts", ts_ms).end_object();
}

void encode_error(std::string& out, std::string_view rid, const Error& e) {
  JsonWriter w(out);
  begin(w, "error", rid).field("code", wire_name(e.code)).field("msg", e.msg);
  if (e.retry_ms > 0) w.field_num("retry_ms", e.retry_ms);
  w.end_object();
}

void encode_out_of_range(std::string& out, std::string_view rid, std::string_view msg,
                         const OffsetRange& range) {
  JsonWriter w(out);
  begin(w, "error", rid)
      .field("code", wire_name(ErrorCode::kOutOfRange))
      .field("msg", msg)
      .field_unum("p", range.p)
      .field_unum("earliest", range.earliest)
      .field_unum("latest", range.latest)
      .end_object();
}

void encode_left_topic(std::string& out, std::string_view rid, std::string_view topic,
                       std::string_view group) {
  JsonWriter w(out);
  begin(w, "left", rid).field("topic", topic);
  if (!group.empty()) w.field("group", group);
  w.end_object();
}

namespace {
void parts_field(JsonWriter& w, std::span<const std::pair<uint32_t, uint64_t>> parts) {
  w.key("parts").begin_array();
  for (const auto& [p, next] : parts) w.begin_object().field_unum("p", p).field_unum("next", next).end_object();
  w.end_array();
}
}  // namespace

void encode_emitted(std::string& out, std::string_view rid, std::string_view topic,
                    std::span<const std::pair<uint32_t, uint64_t>> offs,
                    const std::vector<bool>& dup) {
  JsonWriter w(out);
  begin(w, "emitted", rid).field("topic", topic).key("offs").begin_array();
  for (const auto& [p, off] : offs) w.begin_array().unum(p).unum(off).end_array();
  w.end_array().key("dup").begin_array();
  for (bool d : dup) w.boolean(d);
  w.end_array().end_object();
}

void encode_tailing(std::string& out, std::string_view rid, std::string_view topic,
                    std::span<const std::pair<uint32_t, uint64_t>> parts) {
  JsonWriter w(out);
  begin(w, "tailing", rid).field("topic", topic);
  parts_field(w, parts);
  w.end_object();
}

void encode_assigned(std::string& out, std::string_view rid, std::string_view topic,
                     std::string_view group, uint64_t gen,
                     std::span<const std::pair<uint32_t, uint64_t>> parts) {
  JsonWriter w(out);
  begin(w, "assigned", rid).field("topic", topic).field("group", group).field_unum("gen", gen);
  parts_field(w, parts);
  w.end_object();
}

void encode_revoked(std::string& out, std::string_view topic, std::string_view group,
                    uint64_t gen, std::span<const uint32_t> parts) {
  JsonWriter w(out);
  begin(w, "revoked").field("topic", topic).field("group", group).field_unum("gen", gen);
  w.key("parts").begin_array();
  for (uint32_t p : parts) w.unum(p);
  w.end_array().end_object();
}

void append_score(std::string& out, double s) {
  if (!std::isfinite(s)) s = s > 0 ? std::numeric_limits<double>::max() : std::numeric_limits<double>::lowest();
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, s);
  out.append(buf, ec == std::errc() ? end : buf);
}

void append_rank_entry(std::string& out, const RankView& e) {
  out += "{\"m\":";
  append_json_string(out, e.m);
  out += ",\"s\":";
  append_score(out, e.s);
  out += ",\"r\":";
  out += std::to_string(e.r);
  out.push_back('}');
}

void append_rank_list(std::string& out, std::span<const RankView> entries) {
  out.push_back('[');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out.push_back(',');
    append_rank_entry(out, entries[i]);
  }
  out.push_back(']');
}

void encode_ranks(std::string& out, std::string_view rid, std::string_view board,
                  std::string_view round, bool has_round, std::span<const RankView> entries) {
  JsonWriter w(out);
  begin(w, "ranks", rid).field("board", board);
  if (has_round) w.field("round", round);
  w.key("entries");
  append_rank_list(out, entries);
  out.push_back('}');
}

void encode_committed(std::string& out, std::string_view rid) {
  JsonWriter w(out);
  begin(w, "committed", rid).end_object();
}

void encode_bye(std::string& out, std::string_view code, int reconnect_ms) {
  JsonWriter w(out);
  begin(w, "bye").field("code", code);
  if (reconnect_ms > 0) w.field_num("reconnect_ms", reconnect_ms);
  w.end_object();
}

}  // namespace parley::protocol
