// Reading Parley server frames: one JSON object or an array of them (a tick batch).
// Only the fields the bench checks are extracted; everything else is skipped by
// simdjson's On Demand parser without being materialised.
//
// Thread: a FrameReader belongs to one worker (the parser holds scratch buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <msgpack/object_fwd.hpp>
#include <simdjson.h>

namespace bench {

enum class Op : uint8_t {
  kOther, kWelcome, kJoined, kLeft, kAck, kMsg, kState, kPresence, kError, kBye,
  kPong, kHistory, kHistoryMsg, kDirect,
  kSd  // a state delta (PROTOCOL.md "State deltas")
};

// One server message. String views point into the parser and live only during the
// callback.
struct Event {
  Op op = Op::kOther;
  int64_t rid = -1;
  std::string_view ch;
  uint64_t seq = 0;
  uint64_t id = 0;          // client message id when it is the bench's decimal form
  bool id_ok = false;
  int64_t sent_ns = 0;      // body.t: the publisher's steady-clock send time
  bool dup = false;
  bool recovered = false;
  std::string_view code;    // error and bye
  int64_t retry_ms = -1;
  // State deltas: the stream id, the sender, the body's JSON text (an object)
  // and an sd's `unset` (a JSON array, or empty); a state's key and `pos` (its
  // JSON text), for the ideal (delta_audit.h).
  uint64_t sid = 0;
  std::string_view from;
  std::string_view body;
  std::string_view unset;
  std::string_view key;
  std::string_view pos;
  // The same from a MessagePack frame (msgpack_frame.h), which leaves the JSON
  // views empty: objects of the frame's zone, null when absent.
  const msgpack::object* mp_body = nullptr;
  const msgpack::object* mp_unset = nullptr;
  const msgpack::object* mp_pos = nullptr;
};

// body.t of a bench body's text ({"t":<ns>,...}: t first), or 0.
int64_t body_t(std::string_view body);

class FrameReader {
 public:
  // Calls sink(const Event&) for each message in the frame. data must have
  // simdjson::SIMDJSON_PADDING readable bytes after len. Returns false when the
  // frame is not valid JSON of the expected shape (the caller counts it).
  template <class Sink>
  bool read(const char* data, size_t len, size_t capacity, Sink&& sink);

 private:
  template <class Sink>
  bool read_object(simdjson::ondemand::object obj, Sink& sink, bool in_history);
  // An sds's `d`: sid, then {body} or [pos|null, {body}(, [unset])], repeated;
  // each entry goes to the sink as an Op::kSd event. False when malformed.
  template <class Sink>
  static bool read_sds_entries(simdjson::ondemand::array arr, Sink& sink);

  simdjson::ondemand::parser parser_;
};

Op op_from(std::string_view s);
// Parses a decimal client id; false when it is not one.
bool parse_id(std::string_view s, uint64_t& out);

template <class Sink>
bool FrameReader::read(const char* data, size_t len, size_t capacity, Sink&& sink) {
  using namespace simdjson;
  ondemand::document doc;
  if (parser_.iterate(data, len, capacity).get(doc)) return false;
  ondemand::json_type type;
  if (doc.type().get(type)) return false;
  if (type == ondemand::json_type::array) {
    ondemand::array arr;
    if (doc.get_array().get(arr)) return false;
    for (auto item : arr) {
      ondemand::object obj;
      if (item.get_object().get(obj)) return false;
      if (!read_object(obj, sink, false)) return false;
    }
    return true;
  }
  ondemand::object obj;
  if (doc.get_object().get(obj)) return false;
  return read_object(obj, sink, false);
}

template <class Sink>
bool FrameReader::read_object(simdjson::ondemand::object obj, Sink& sink, bool in_history) {
  using namespace simdjson;
  Event ev;
  for (auto field : obj) {
    // Raw key comparison: no unescaping copy, and the keys the bench checks never
    // contain escapes.
    ondemand::raw_json_string key;
    if (field.key().get(key)) return false;
    ondemand::value v = field.value();
    if (key == "op") {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      ev.op = op_from(s);
    } else if (key == "seq") {
      if (v.get_uint64().get(ev.seq)) return false;
    } else if (key == "ch") {
      if (v.get_string().get(ev.ch)) return false;
    } else if (key == "id") {
      std::string_view s;
      if (!v.get_string().get(s)) ev.id_ok = parse_id(s, ev.id);
    } else if (key == "rid") {
      int64_t r;
      if (!v.get_int64().get(r)) ev.rid = r;
    } else if (key == "body") {
      ondemand::object body;
      std::string_view raw;
      if (!v.get_object().get(body) && !body.raw_json().get(raw)) {
        ev.body = raw;
        ev.sent_ns = body_t(raw);
      }
    } else if (key == "sid") {
      if (v.get_uint64().get(ev.sid)) return false;
    } else if (key == "from") {
      if (v.get_string().get(ev.from)) return false;
    } else if (key == "key") {
      if (v.get_string().get(ev.key)) return false;
    } else if (key == "pos") {
      ondemand::array arr;
      if (v.get_array().get(arr) || arr.raw_json().get(ev.pos)) return false;
    } else if (key == "unset") {
      ondemand::array arr;
      if (v.get_array().get(arr) || arr.raw_json().get(ev.unset)) return false;
    } else if (key == "dup") {
      bool b;
      if (!v.get_bool().get(b)) ev.dup = b;
    } else if (key == "recovered") {
      bool b;
      if (!v.get_bool().get(b)) ev.recovered = b;
    } else if (key == "code") {
      std::string_view s;
      if (!v.get_string().get(s)) ev.code = s;
    } else if (key == "retry_ms") {
      int64_t r;
      if (!v.get_int64().get(r)) ev.retry_ms = r;
    } else if (key == "msgs") {
      ondemand::array arr;
      if (v.get_array().get(arr)) return false;
      for (auto item : arr) {
        ondemand::object m;
        if (item.get_object().get(m)) return false;
        if (!read_object(m, sink, true)) return false;
      }
    } else if (key == "d") {
      // An `sds` (PROTOCOL.md "Batched state deltas"): each entry is an `sd`.
      ondemand::array arr;
      if (v.get_array().get(arr) || !read_sds_entries(arr, sink)) return false;
    }
  }
  if (in_history && ev.op == Op::kMsg) ev.op = Op::kHistoryMsg;
  sink(ev);
  return true;
}

template <class Sink>
bool FrameReader::read_sds_entries(simdjson::ondemand::array arr, Sink& sink) {
  using namespace simdjson;
  Event e;
  bool want_sid = true;
  size_t entries = 0;
  for (auto item : arr) {
    ondemand::value iv;
    if (item.get(iv)) return false;
    if (want_sid) {
      e = Event{};
      e.op = Op::kSd;
      if (iv.get_uint64().get(e.sid) || e.sid == 0) return false;
      want_sid = false;
      continue;
    }
    ondemand::json_type t;
    if (iv.type().get(t)) return false;
    auto read_body = [&](ondemand::value bv) {
      ondemand::object body;
      std::string_view raw;
      if (bv.get_object().get(body) || body.raw_json().get(raw)) return false;
      e.body = raw;
      e.sent_ns = body_t(raw);
      return true;
    };
    if (t == ondemand::json_type::object) {
      if (!read_body(iv)) return false;
    } else if (t == ondemand::json_type::array) {
      ondemand::array parts;
      if (iv.get_array().get(parts)) return false;
      int idx = 0;
      for (auto part : parts) {
        ondemand::value pv;
        if (part.get(pv)) return false;
        if (idx == 0) {
          bool null = false;
          if (pv.is_null().get(null)) return false;
          if (!null) {
            ondemand::array pos;
            if (pv.get_array().get(pos) || pos.raw_json().get(e.pos)) return false;
          }
        } else if (idx == 1) {
          if (!read_body(pv)) return false;
        } else if (idx == 2) {
          ondemand::array unset;
          if (pv.get_array().get(unset) || unset.raw_json().get(e.unset)) return false;
        } else {
          return false;
        }
        ++idx;
      }
      if (idx < 2) return false;
    } else {
      return false;
    }
    sink(e);
    ++entries;
    want_sid = true;
  }
  return want_sid && entries > 0;
}

}  // namespace bench
