// libFuzzer target for everything a client's bytes reach before the session
// sees them: the TCP framing, the WebSocket framing (protocol/websocket.h,
// walked the way net/ws_connection.cc walks it), the frame decoder, and the
// body scanner it relies on. Besides crashes and sanitizer reports it checks
// invariants, because a decoder that never crashes can still hand the hub a bad
// channel name or a body that is not JSON. Build and run with
// tests/fuzz/run_fuzz.sh.
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "protocol/msgpack_decoder.h"
#include "protocol/msgpack_encoder.h"
#include "protocol/raw_member.h"
#include "protocol/state_delta.h"
#include "protocol/tcp_framing.h"
#include "protocol/websocket.h"

namespace {

using namespace parley;
using namespace parley::protocol;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "invariant broken: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// The target's own parser, separate from the decoder's thread_local one, so the
// checks cannot be fooled by state the decoder left behind.
simdjson::dom::parser& oracle() {
  static simdjson::dom::parser parser;
  return parser;
}

bool is_json(std::string_view text, simdjson::dom::element_type* type = nullptr) {
  simdjson::dom::element e;
  if (oracle().parse(text.data(), text.size()).get(e)) return false;
  if (type) *type = e.type();
  return true;
}

bool is_rid(std::string_view rid) {
  simdjson::dom::element_type type;
  if (rid.empty()) return true;
  if (!is_json(rid, &type)) return false;
  return type == simdjson::dom::element_type::INT64 ||
         type == simdjson::dom::element_type::UINT64 ||
         type == simdjson::dom::element_type::STRING;
}

bool is_minified(std::string_view json) {
  std::string again(json.size(), '\0');
  size_t len = 0;
  if (simdjson::minify(json.data(), json.size(), again.data(), len)) return false;
  return std::string_view(again.data(), len) == json;
}

bool has_channel(OpKind k) {
  return k == OpKind::kJoin || k == OpKind::kLeave || k == OpKind::kPub || k == OpKind::kState ||
         k == OpKind::kUp || k == OpKind::kHistory;
}
bool has_topic(OpKind k) {
  return k == OpKind::kEmit || k == OpKind::kTail || k == OpKind::kConsume || k == OpKind::kCommit;
}
bool has_body(OpKind k) { return k == OpKind::kPub || k == OpKind::kState || k == OpKind::kUp; }

// `json_sizes`: the frame arrived as JSON, so its bodies' JSON text is what the
// limit held to (a MessagePack body's text may be longer: bin becomes base64).
void check_op(const ClientOp& op, std::string_view frame, const DecodeLimits& limits,
              bool json_sizes = true) {
  check(frame.size() <= limits.max_message_bytes, "accepted an oversized frame");
  check(is_rid(op.rid), "rid is not an integer or string");
  // A leave names a channel or a topic.
  if (op.kind == OpKind::kLeave && !op.topic.empty()) {
    check(op.ch.empty() && is_valid_channel(op.topic), "accepted a bad leave of a topic");
  } else if (has_channel(op.kind)) {
    check(is_valid_channel(op.ch), "accepted a bad channel name");
  }
  if (has_topic(op.kind)) check(is_valid_channel(op.topic), "accepted a bad topic name");
  if (op.kind == OpKind::kRank) {
    check(is_valid_channel(op.board) && !op.member.empty() && op.around <= kMaxRankAround,
          "accepted a bad rank");
  }
  if (op.kind == OpKind::kPub) check(!op.id.empty(), "accepted an empty id");
  if (op.kind == OpKind::kState) check(!op.key.empty(), "accepted an empty key");
  if (op.kind == OpKind::kHistory) {
    check(op.after.has_value() != op.before.has_value(), "history without exactly one bound");
    check(op.limit >= 1 && op.limit <= kHistoryMaxLimit, "history limit out of range");
  }
  if (has_body(op.kind)) {
    check(is_json(op.body), "body is not JSON");
    check(is_minified(op.body), "body is not minified");
    check(!json_sizes || op.body.size() <= limits.max_message_bytes, "accepted an oversized body");
    std::string out;
    encode_msg(out, {.ch = op.ch, .seq = 1, .from = "u", .id = op.id, .ts_ms = 1, .body = op.body});
    check(is_json(out), "encoded msg is not JSON");
  }
  if (op.kind == OpKind::kEmit) {
    check(!op.events.empty() && op.events.size() <= kMaxEmitEvents, "emit event count out of range");
    check(is_valid_channel(op.topic), "accepted an emit with a bad topic name");
    for (const auto& ev : op.events) {
      check(is_json(ev.body), "event body is not JSON");
      check(is_minified(ev.body), "event body is not minified");
      check(!json_sizes || ev.body.size() <= limits.max_message_bytes,
            "accepted an oversized event body");
      check(!ev.key.empty() && !ev.type.empty(), "accepted an event without key or type");
    }
  }
  std::string out;
  encode_ack(out, op.rid, op.ch, op.id, 1, false);
  check(is_json(out), "encoded ack is not JSON");
}

void check_failure(const DecodeFailure& f) {
  check(f.error.code == ErrorCode::kBadRequest || f.error.code == ErrorCode::kTooLarge,
        "decoder failed with a code other than bad_request/too_large");
  check(is_rid(f.rid), "failure rid is not an integer or string");
  std::string out;
  encode_error(out, f.rid, f.error);
  check(is_json(out), "encoded error is not JSON");
}

void decode(std::string_view frame, const DecodeLimits& limits) {
  auto r = decode_client_op(frame, limits);
  if (const auto* op = std::get_if<ClientOp>(&r)) {
    check_op(*op, frame, limits);
  } else {
    check_failure(std::get<DecodeFailure>(r));
  }
}

// A JSON body's MessagePack form, or "" when it does not convert (a bug).
std::string msgpack_of(std::string_view json, bool is_body) {
  std::string mp;
  check(append_msgpack_from_json(mp, json, is_body), "valid JSON did not convert to MessagePack");
  return mp;
}

// Body conversion both ways: a body's MessagePack converts back to JSON, and
// that JSON to the same MessagePack (after one pass the forms are fixed points:
// floats in shortest form, $bin objects as bin).
void check_body_round_trip(std::string_view json_body) {
  const std::string mp = msgpack_of(json_body, true);
  std::string back;
  check(!msgpack_body_to_json(mp, back), "a converted body is not valid MessagePack");
  check(is_json(back) && is_minified(back), "a body converted back is not minified JSON");
  check(msgpack_of(back, true) == mp, "a body changed in a JSON -> MessagePack -> JSON round trip");
}

void check_op_bodies(const ClientOp& op) {
  if (has_body(op.kind)) check_body_round_trip(op.body);
  for (const auto& ev : op.events) check_body_round_trip(ev.body);
}

void decode_msgpack(std::string_view frame, const DecodeLimits& limits) {
  auto r = decode_client_op_msgpack(frame, limits);
  if (const auto* op = std::get_if<ClientOp>(&r)) {
    check_op(*op, frame, limits, false);
    check_op_bodies(*op);
    if (!has_body(op->kind)) return;
    // What the fan-out makes of it: a msg frame in MessagePack that converts back.
    std::string msg;
    encode_msg(msg, {.ch = op->ch, .seq = 1, .from = "u", .id = op->id, .ts_ms = 1, .body = op->body});
    const std::string mp = msgpack_of(msg, false);
    std::string json;
    check(!msgpack_frame_to_json(mp, json) && msgpack_of(json, false) == mp,
          "an encoded msg frame does not convert back");
  } else {
    check_failure(std::get<DecodeFailure>(r));
  }
}

// The input as any MessagePack body value: valid JSON comes out, and the same
// MessagePack when converted again.
void check_msgpack_body(std::string_view input) {
  std::string json;
  if (msgpack_body_to_json(input, json)) return;
  check(is_json(json) && is_minified(json), "a body converted from MessagePack is not minified JSON");
  const std::string once = msgpack_of(json, true);
  std::string again;
  check(!msgpack_body_to_json(once, again) && msgpack_of(again, true) == once,
        "a MessagePack body is not stable under conversion");
}

// The op with each body replaced by its MessagePack: a JSON and a MessagePack
// client that sent the same values may differ only in how floats were written.
ClientOp normalized(ClientOp op) {
  if (has_body(op.kind)) op.body = msgpack_of(op.body, true);
  for (auto& ev : op.events) ev.body = msgpack_of(ev.body, true);
  return op;
}

// A JSON frame and its MessagePack form decode alike (both within the limit;
// `$bin` left out: outside a body a JSON client may send it, a MessagePack
// client cannot send bin there).
void check_same_in_both(std::string_view input, const DecodeLimits& limits) {
  if (input.size() > limits.max_message_bytes || input.find("$bin") != std::string_view::npos) return;
  std::string mp;
  if (!is_json(input) || !append_msgpack_from_json(mp, input)) return;
  if (mp.size() > limits.max_message_bytes) return;
  auto from_json = decode_client_op(input, limits);
  auto from_mp = decode_client_op_msgpack(mp, limits);
  check(from_json.index() == from_mp.index(), "JSON and MessagePack verdicts differ");
  if (const auto* op = std::get_if<ClientOp>(&from_json)) {
    check(normalized(*op) == normalized(std::get<ClientOp>(from_mp)),
          "JSON and MessagePack decode to different ops");
  } else {
    const auto& a = std::get<DecodeFailure>(from_json);
    const auto& b = std::get<DecodeFailure>(from_mp);
    check(a.error.code == b.error.code && a.rid == b.rid, "JSON and MessagePack errors differ");
  }
}

// For every object simdjson accepts, the scanner must find each member's text,
// and that text must be the same kind of JSON value the DOM saw there.
void check_raw_members(std::string_view frame) {
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (oracle().parse(frame.data(), frame.size()).get(root) || root.get_object().get(obj)) return;
  std::vector<simdjson::dom::element_type> types;
  for (const auto& member : obj) types.push_back(member.value.type());
  for (size_t i = 0; i < types.size(); ++i) {
    const auto raw = raw_member_value(frame, i);
    check(raw.has_value(), "scanner lost a member of a valid object");
    simdjson::dom::element_type type;
    check(is_json(*raw, &type) && type == types[i], "scanner found the wrong member text");
  }
  check(!raw_member_value(frame, types.size()), "scanner found a member too many");
}

// The obvious whole-buffer reading of a length-prefixed stream.
struct Expected {
  std::vector<std::string_view> frames;
  bool oversized = false;
  uint32_t oversized_length = 0;
};

Expected frames_of(std::string_view wire, size_t cap) {
  Expected e;
  while (wire.size() >= 4) {
    const auto* u = reinterpret_cast<const unsigned char*>(wire.data());
    const uint32_t len =
        (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
    if (len > cap) {
      e.oversized = true;
      e.oversized_length = len;
      break;
    }
    if (wire.size() - 4 < len) break;
    e.frames.push_back(wire.substr(4, len));
    wire.remove_prefix(4 + len);
  }
  return e;
}

// Feeds `wire` in chunks whose sizes come from `seed`, alternating append and
// prepare/commit, and compares with frames_of().
void check_reader(std::string_view wire, size_t cap, uint32_t seed, const DecodeLimits& limits) {
  const Expected want = frames_of(wire, cap);
  LengthPrefixedReader reader(cap);
  std::vector<std::string> got;
  bool oversized = false;
  uint32_t oversized_length = 0;
  for (size_t i = 0; i < wire.size() && !oversized;) {
    seed = seed * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(1 + (seed >> 16) % 64, wire.size() - i);
    if (seed & 1) {
      reader.append(wire.substr(i, n));
    } else {
      auto room = reader.prepare(n);
      check(room.size() >= n, "prepare gave too little room");
      std::memcpy(room.data(), wire.data() + i, n);
      reader.commit(n);
    }
    i += n;
    for (auto next = reader.next();; next = reader.next()) {
      if (next.status == LengthPrefixedReader::Status::kFrame) {
        check(next.declared_length == next.frame.size(), "frame length mismatch");
        got.emplace_back(next.frame);
        decode(next.frame, limits);
        continue;
      }
      if (next.status == LengthPrefixedReader::Status::kOversized) {
        oversized = true;
        oversized_length = next.declared_length;
        check(reader.failed(), "oversized but not failed");
      }
      break;
    }
  }
  check(got.size() == want.frames.size(), "reader yielded a different number of frames");
  for (size_t i = 0; i < got.size(); ++i) check(got[i] == want.frames[i], "reader frame differs");
  check(oversized == want.oversized, "reader disagrees about an oversized length");
  if (oversized) check(oversized_length == want.oversized_length, "wrong oversized length");
}

// ---------------------------------------------------------------------------
// WebSocket framing (RFC 6455), server side.

namespace ws = protocol::ws;

uint32_t next_rand(uint32_t& seed) {
  seed = seed * 1103515245u + 12345u;
  return seed >> 16;
}

// An independent reading of a frame header (RFC 6455 5.2) to hold
// ws::parse_header to. The one ordering it shares with the code: a 64-bit
// length with its top bit set is refused as soon as those 8 bytes are there,
// before the mask arrives.
ws::HeaderStatus ref_parse_header(const uint8_t* d, size_t len, ws::FrameHeader& h) {
  if (len < 2) return ws::HeaderStatus::kNeedMore;
  const size_t ext = (d[1] & 0x7F) == 126 ? 2 : (d[1] & 0x7F) == 127 ? 8 : 0;
  if (len < 2 + ext) return ws::HeaderStatus::kNeedMore;
  uint64_t n = d[1] & 0x7F;
  if (ext) {
    n = 0;
    for (size_t i = 0; i < ext; ++i) n = n * 256 + d[2 + i];
  }
  if (ext == 8 && (d[2] & 0x80)) return ws::HeaderStatus::kInvalid;
  const bool masked = d[1] >> 7;
  if (len < 2 + ext + (masked ? 4 : 0)) return ws::HeaderStatus::kNeedMore;
  h = {};
  h.fin = d[0] >> 7;
  h.rsv = (d[0] >> 4) & 7;
  h.opcode = d[0] & 15;
  h.masked = masked;
  if (masked) std::memcpy(h.mask, d + 2 + ext, 4);
  h.payload_len = n;
  h.header_len = 2 + ext + (masked ? 4 : 0);
  return ws::HeaderStatus::kOk;
}

// RFC 6455 5.2, 5.4, 5.5 and 5.1 as a server applies them to a client frame.
int ref_client_header_code(const ws::FrameHeader& h, uint64_t max_message) {
  const bool control = h.opcode >= 8;
  const bool known = h.opcode <= 2 || (h.opcode >= 8 && h.opcode <= 10);
  if (h.rsv != 0 || !known || !h.masked) return 1002;
  if (control && (!h.fin || h.payload_len > 125)) return 1002;
  if (!control && h.payload_len > max_message) return 1009;
  return 0;
}

bool same_header(const ws::FrameHeader& a, const ws::FrameHeader& b) {
  return a.fin == b.fin && a.rsv == b.rsv && a.opcode == b.opcode && a.masked == b.masked &&
         a.payload_len == b.payload_len && a.header_len == b.header_len &&
         (!a.masked || std::memcmp(a.mask, b.mask, 4) == 0);
}

// Close codes a peer may send (RFC 6455 7.4.1, the IANA registry as Autobahn
// 7.7/7.9 test it).
bool sendable_close_code(int code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
         (code >= 3000 && code <= 4999);
}

bool valid_utf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

// Unmasks `len` bytes in place with ws::unmask, checking it against the RFC's
// definition (5.3: octet i XOR mask[i % 4]), against unmasking in two pieces
// at `cut` (the offset argument), and that masking again gives back the input.
void checked_unmask(uint8_t* data, size_t len, const uint8_t mask[4], size_t cut) {
  const std::vector<uint8_t> orig(data, data + len);
  std::vector<uint8_t> want(orig);
  for (size_t i = 0; i < len; ++i) want[i] ^= mask[i % 4];
  std::vector<uint8_t> pieces(orig);
  cut = len ? cut % (len + 1) : 0;
  ws::unmask(pieces.data(), cut, mask, 0);
  ws::unmask(pieces.data() + cut, len - cut, mask, cut);
  check(pieces == want, "unmask in two pieces differs from RFC 6455 5.3");
  ws::unmask(data, len, mask);
  check(std::equal(want.begin(), want.end(), data), "unmask differs from RFC 6455 5.3");
  ws::unmask(pieces.data(), len, mask);
  check(pieces == orig, "unmasking twice is not the identity");
}

// A server frame header must read back as what was encoded, in the fewest bytes.
void check_server_header(uint8_t opcode, uint64_t len) {
  uint8_t out[ws::kMaxServerHeader + 4];
  std::memset(out, 0xAA, sizeof out);
  const size_t n = ws::encode_server_header(opcode, len, out);
  check(n <= ws::kMaxServerHeader, "server header longer than kMaxServerHeader");
  check(n == (len < 126 ? 2u : len <= 0xFFFF ? 4u : 10u), "server header not the shortest");
  check(std::all_of(out + n, std::end(out), [](uint8_t b) { return b == 0xAA; }),
        "encode_server_header wrote past its length");
  // Exactly n bytes on the heap, so that reading past them is an ASan report.
  std::vector<uint8_t> wire(out, out + n);
  ws::FrameHeader h;
  for (size_t i = 0; i < n; ++i) {
    check(ws::parse_header(wire.data(), i, h) == ws::HeaderStatus::kNeedMore,
          "a cut server header parsed");
  }
  check(ws::parse_header(wire.data(), n, h) == ws::HeaderStatus::kOk, "server header refused");
  check(h.fin && h.rsv == 0 && h.opcode == opcode && !h.masked, "server header flags differ");
  check(h.payload_len == len, "server header length differs");
  check(h.header_len == n, "server header_len differs");
}

// What a WebSocket connection did with the frames it read.
struct WsEvent {
  char kind;  // T: text message delivered, B: binary, P: pong sent, C: close echoed, F: failed
  int code = 0;
  std::string bytes;
  bool operator==(const WsEvent&) const = default;
};

// Records what ws::FrameReader (the read side of net::WsConnection) asks the
// connection to do, checking each request against the references above.
struct WsRecorder final : ws::FrameReader::Sink {
  explicit WsRecorder(uint64_t max) : max_message(max) {}
  uint64_t max_message;
  std::vector<WsEvent> events;
  bool ended = false;

  void on_message(std::string_view payload, bool binary) override {
    check(!ended, "a message after the connection ended");
    check(payload.size() <= max_message, "delivered a message above the limit");
    if (!binary) check(valid_utf8(payload), "delivered a text message that is not UTF-8");
    events.push_back({binary ? 'B' : 'T', 0, std::string(payload)});
  }
  void on_ping(std::string_view payload) override {
    check(!ended, "a ping after the connection ended");
    check(payload.size() <= ws::kMaxControlPayload, "ping longer than 125 bytes");
    check_server_header(ws::kPong, payload.size());
    events.push_back({'P', 0, std::string(payload)});
  }
  void on_close(int code) override {
    check(!ended, "a close after the connection ended");
    check(code == 1005 || sendable_close_code(code), "accepted a close code that may not be sent");
    ended = true;
    events.push_back({'C', code});
  }
  void on_fail(int code, const char*) override {
    check(!ended, "a failure after the connection ended");
    check(code == 1002 || code == 1007 || code == 1009, "failed with a code RFC 6455 does not name");
    ended = true;
    events.push_back({'F', code});
  }
};

// One read of `got` bytes, exactly that many on the heap, so that any read past
// the bytes received is an ASan report.
void feed_copy(ws::FrameReader& reader, std::string_view got, WsRecorder& rec) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[got.size()]);
  std::copy(got.begin(), got.end(), buf.get());
  reader.feed(buf.get(), got.size(), rec);
}

// Walks the stream's frame headers as the reader must see them (up to the first
// one it refuses), checking parse_header and check_client_header against the
// RFC references, every close payload against 7.4, and unmask on each payload.
void check_ws_headers(std::string_view wire, uint64_t max_message, uint32_t seed) {
  std::vector<uint8_t> data(wire.begin(), wire.end());
  size_t pos = 0;
  while (pos < data.size()) {
    ws::FrameHeader h, ref;
    const auto status = ws::parse_header(data.data() + pos, data.size() - pos, h);
    check(status == ref_parse_header(data.data() + pos, data.size() - pos, ref),
          "parse_header status differs from RFC 6455 5.2");
    if (status != ws::HeaderStatus::kOk) return;
    check(same_header(h, ref), "parse_header fields differ from RFC 6455 5.2");
    check(h.header_len >= 2 && h.header_len <= data.size() - pos, "header_len beyond the input");
    const int code = ws::check_client_header(h, max_message);
    check(code == ref_client_header_code(h, max_message), "check_client_header code differs");
    if (code || data.size() - pos - h.header_len < h.payload_len) return;
    uint8_t* payload = data.data() + pos + h.header_len;
    checked_unmask(payload, h.payload_len, h.mask, next_rand(seed));
    if (h.opcode == ws::kClose) {
      const std::string_view p(reinterpret_cast<char*>(payload), h.payload_len);
      int close = 0;
      const int err = ws::check_close_payload(p, close);
      if (p.size() == 1) check(err == 1002, "accepted a 1-byte close payload");
      if (!err && !p.empty()) {
        check(close == (static_cast<uint8_t>(p[0]) << 8 | static_cast<uint8_t>(p[1])),
              "close code differs from the payload's");
        check(valid_utf8(p.substr(2)), "accepted a close reason that is not UTF-8");
      }
      if (!err && p.empty()) check(close == 1005, "empty close payload without 1005");
    }
    pos += h.header_len + h.payload_len;
  }
}

// Feeds a client byte stream in one read and in reads cut by `seed`; both must
// do exactly the same, and what is left over must be the start of a frame.
std::vector<WsEvent> check_ws_stream(std::string_view wire, uint64_t max_message, uint32_t seed) {
  check_ws_headers(wire, max_message, seed);
  WsRecorder whole_events(max_message);
  ws::FrameReader whole(max_message);
  feed_copy(whole, wire, whole_events);
  if (!whole.done() && !whole.partial().empty()) {
    ws::FrameHeader h;
    const auto* d = reinterpret_cast<const uint8_t*>(whole.partial().data());
    const auto status = ws::parse_header(d, whole.partial().size(), h);
    check(status == ws::HeaderStatus::kNeedMore ||
              (status == ws::HeaderStatus::kOk &&
               whole.partial().size() - h.header_len < h.payload_len),
          "stopped before a complete frame");
  }

  WsRecorder cut_events(max_message);
  ws::FrameReader cut(max_message);
  for (size_t i = 0; i < wire.size();) {
    const uint32_t r = next_rand(seed);
    const size_t n = std::min<size_t>(r % 8 == 0 ? 1 : 1 + r % 97, wire.size() - i);
    feed_copy(cut, wire.substr(i, n), cut_events);
    i += n;
  }
  check(cut_events.events == whole_events.events,
        "cutting the reads changed what the connection did");
  check(cut.done() == whole.done() && cut.failed() == whole.failed(),
        "cutting the reads changed how the connection ended");
  if (!whole.done()) {
    check(cut.partial() == whole.partial(), "cutting the reads changed the bytes kept");
    check(cut.in_message() == whole.in_message() && cut.message() == whole.message(),
          "cutting the reads changed the message being assembled");
  }
  for (const auto& e : whole_events.events) {
    if (e.kind == 'T') decode(e.bytes, DecodeLimits{});
  }
  return whole_events.events;
}

// A masked client frame, its length in the form `form` picks (0: shortest;
// 1: 16-bit; 2: 64-bit; the RFC asks for the shortest, servers accept any).
void append_client_frame(std::string& out, bool fin, uint8_t opcode, std::string_view payload,
                         uint32_t mask_bits, unsigned form) {
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  const uint64_t n = payload.size();
  if (form == 0 && n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (form <= 1 && n <= 0xFFFF) {
    out.push_back(static_cast<char>(0x80 | 126));
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<char>(n >> s));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>(n >> s));
  }
  uint8_t mask[4];
  for (int i = 0; i < 4; ++i) mask[i] = static_cast<uint8_t>(mask_bits >> (8 * i));
  out.append(reinterpret_cast<const char*>(mask), 4);
  for (size_t i = 0; i < payload.size(); ++i) {
    out.push_back(static_cast<char>(payload[i] ^ mask[i % 4]));
  }
}

// The input cut at newlines into messages, sent as a well-behaved client would:
// text or binary, fragmented, with pings between fragments and a close at the
// end. The connection must deliver exactly those messages up to the first text
// one that is not UTF-8, and fail that one with 1007.
void check_ws_messages(std::string_view input, uint32_t seed) {
  std::vector<std::pair<bool, std::string_view>> messages;  // (binary, bytes)
  std::vector<std::string_view> pings;
  std::string wire;
  size_t start = 0;
  for (size_t i = 0; i <= input.size(); ++i) {
    if (i < input.size() && input[i] != '\n') continue;
    const std::string_view msg = input.substr(start, i - start);
    start = i + 1;
    const bool binary = next_rand(seed) % 4 == 0;
    messages.emplace_back(binary, msg);
    const size_t fragments = 1 + next_rand(seed) % 4;
    size_t done = 0;
    for (size_t f = 0; f < fragments; ++f) {
      const size_t n =
          f + 1 == fragments ? msg.size() - done : next_rand(seed) % (msg.size() - done + 1);
      const uint8_t op = f == 0 ? (binary ? ws::kBinary : ws::kText) : ws::kCont;
      append_client_frame(wire, f + 1 == fragments, op, msg.substr(done, n),
                          next_rand(seed) << 16 | next_rand(seed), next_rand(seed) % 3);
      done += n;
      if (next_rand(seed) % 3 == 0) {
        const std::string_view ping =
            msg.substr(0, std::min<size_t>(msg.size(), next_rand(seed) % 126));
        pings.push_back(ping);
        append_client_frame(wire, true, ws::kPing, ping, next_rand(seed), 0);
      }
    }
  }
  const int close_code = 1000 + static_cast<int>(next_rand(seed) % 2);
  append_client_frame(wire, true, ws::kClose, ws::close_payload(close_code, "bye"), seed, 0);

  const auto events = check_ws_stream(wire, input.size() + 1, seed);
  size_t m = 0, p = 0;
  bool failed = false, closed = false;
  for (const auto& e : events) {
    check(!failed && !closed, "an event after the connection ended");
    switch (e.kind) {
      case 'T':
      case 'B':
        check(m < messages.size() && messages[m].first == (e.kind == 'B') &&
                  messages[m].second == e.bytes,
              "delivered a different message than was sent");
        check(e.kind == 'B' || valid_utf8(e.bytes), "delivered text that is not UTF-8");
        ++m;
        break;
      case 'P':
        check(p < pings.size() && pings[p] == e.bytes, "answered a different ping");
        ++p;
        break;
      case 'F':
        check(e.code == 1007, "a well-formed stream failed with a code other than 1007");
        check(m < messages.size() && !messages[m].first && !valid_utf8(messages[m].second),
              "failed a message that is fine");
        failed = true;
        break;
      case 'C':
        check(e.code == close_code, "echoed a different close code");
        closed = true;
        break;
      default:
        fail("unknown event");
    }
  }
  check(failed || closed, "a complete stream neither closed nor failed");
  if (closed) check(m == messages.size(), "closed before delivering every message");
}

// Utf8Checker, fed the input in pieces, must agree with simdjson at every
// piece boundary and fail only once a prefix cannot be completed (fail fast).
void check_utf8(std::string_view input, size_t split, uint32_t seed) {
  const bool valid = valid_utf8(input);
  {
    split %= input.size() + 1;
    ws::Utf8Checker c;
    const bool ok = c.feed(input.substr(0, split)) && c.feed(input.substr(split)) && c.complete();
    check(ok == valid, "Utf8Checker split in two disagrees with simdjson");
  }
  ws::Utf8Checker c;
  size_t done = 0;
  while (done < input.size()) {
    const size_t n = std::min<size_t>(1 + next_rand(seed) % 64, input.size() - done);
    const bool ok = c.feed(input.substr(done, n));
    done += n;
    const std::string_view prefix = input.substr(0, done);
    if (!ok) {
      // Not too fast either: the prefix before this piece was checked to be
      // completable below, so only this piece can hold the bad byte.
      check(!valid, "Utf8Checker refused valid UTF-8");
      return;
    }
    check(c.complete() == valid_utf8(prefix), "Utf8Checker complete() disagrees with simdjson");
    if (!c.complete()) {
      // The prefix must end in the start of a character some continuation
      // bytes complete (3 at most; the boundaries of each byte's range suffice).
      size_t lead = done;
      while (lead > 0 && done - lead < 4 && (static_cast<uint8_t>(input[lead - 1]) & 0xC0) == 0x80)
        --lead;
      check(lead > 0, "incomplete prefix without a lead byte");
      --lead;
      check(valid_utf8(input.substr(0, lead)), "Utf8Checker let an invalid character pass");
      static constexpr uint8_t kEdges[] = {0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF};
      const std::string tail(prefix.substr(lead));
      bool completable = false;
      for (int k = 1; k <= 3 && !completable; ++k) {
        for (int combo = 0; combo < 216 && !completable; ++combo) {
          std::string t = tail;
          for (int j = 0, c2 = combo; j < k; ++j, c2 /= 6)
            t.push_back(static_cast<char>(kEdges[c2 % 6]));
          completable = valid_utf8(t);
        }
      }
      check(completable, "Utf8Checker accepted a prefix no bytes can complete (not fail-fast)");
    }
  }
  check(c.complete() == valid, "Utf8Checker fed in pieces disagrees with simdjson");
}

// close_payload from a valid code and a UTF-8 reason must be accepted back
// with that code, fit a control frame, and keep the longest reason that fits.
void check_close_roundtrip(int code, std::string_view reason) {
  const std::string p = ws::close_payload(code, reason);
  check(p.size() >= 2 && p.size() <= ws::kMaxControlPayload, "close payload size out of range");
  int got = 0;
  check(ws::check_close_payload(p, got) == 0, "refused close_payload's own payload");
  check(got == code, "close_payload's code read back differently");
  const std::string_view kept = std::string_view(p).substr(2);
  check(reason.substr(0, kept.size()) == kept, "close reason is not a prefix of the reason");
  if (reason.size() <= ws::kMaxControlPayload - 2) {
    check(kept.size() == reason.size(), "a close reason that fits was cut");
  } else {
    size_t want = ws::kMaxControlPayload - 2;
    while ((static_cast<uint8_t>(reason[want]) & 0xC0) == 0x80) --want;
    check(kept.size() == want, "a long close reason was not cut at the last character that fits");
  }
}

// Encodes input bytes as code points of every UTF-8 length.
std::string utf8_from(std::string_view input) {
  std::string out;
  for (size_t i = 0; i + 2 < input.size(); i += 3) {
    const auto* u = reinterpret_cast<const uint8_t*>(input.data() + i);
    uint32_t cp =
        u[0] < 0x80 ? u[0] : ((uint32_t{u[0]} & 0x1F) << 16 | u[1] << 8 | u[2]) % 0x110000;
    if (cp >= 0xD800 && cp <= 0xDFFF) cp -= 0x800;
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | cp >> 6));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | cp >> 12));
      out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | cp >> 18));
      out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  check(valid_utf8(out), "the fuzzer's own UTF-8 encoder is wrong");
  return out;
}

void check_close(std::string_view input, uint32_t seed) {
  // Any payload: the verdict must be the RFC's (on_close_frame checks the
  // accepted ones in detail).
  for (const std::string_view p : {input, input.substr(0, 1), input.substr(0, seed % 126)}) {
    int code = 0;
    const int err = ws::check_close_payload(p, code);
    int want = 0;
    if (p.size() == 1) {
      want = 1002;
    } else if (p.size() >= 2) {
      const int c = static_cast<uint8_t>(p[0]) << 8 | static_cast<uint8_t>(p[1]);
      want = !sendable_close_code(c) ? 1002 : !valid_utf8(p.substr(2)) ? 1007 : 0;
    }
    check(err == want, "check_close_payload verdict differs from RFC 6455 7.4");
    if (p.empty()) check(code == 1005, "empty close payload without 1005");
  }
  static constexpr int kCodes[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011};
  const int code = seed % 3 ? kCodes[seed % 9] : 3000 + static_cast<int>(seed >> 8) % 2000;
  const std::string_view raw = input.substr(std::min<size_t>(2, input.size()));
  if (valid_utf8(raw)) check_close_roundtrip(code, raw);
  check_close_roundtrip(code, utf8_from(input));
  // The codes the server closes with, and its reasons.
  check_close_roundtrip(4010, "slow consumer");
}

// Once per process: every close code, and every first two header bytes cut at
// every length, since a mutation rarely hits one particular 16-bit value (a
// close code refused or let through, one opcode).
bool check_ws_exhaustively() {
  for (int c = 0; c <= 0xFFFF; ++c) {
    const char hi = static_cast<char>(c >> 8), lo = static_cast<char>(c);
    for (const std::string_view reason : {"", "ok \xc3\xa9", "\xc3"}) {
      std::string p{hi, lo};
      p.append(reason);
      int code = 0;
      const int want = !sendable_close_code(c) ? 1002 : !valid_utf8(reason) ? 1007 : 0;
      check(ws::check_close_payload(p, code) == want, "check_close_payload verdict for a code");
      if (!want) check(code == c, "check_close_payload read another code");
    }
  }
  for (int b = 0; b <= 0xFFFF; ++b) {
    for (const uint8_t fill : {0x00, 0x01, 0x80}) {
      uint8_t d[14];
      d[0] = static_cast<uint8_t>(b >> 8);
      d[1] = static_cast<uint8_t>(b);
      for (size_t i = 2; i < sizeof d; ++i) d[i] = static_cast<uint8_t>(fill + i);
      for (size_t n = 0; n <= sizeof d; ++n) {
        ws::FrameHeader h, ref;
        const auto status = ws::parse_header(d, n, h);
        check(status == ref_parse_header(d, n, ref), "parse_header status differs (sweep)");
        if (status != ws::HeaderStatus::kOk) continue;
        check(same_header(h, ref), "parse_header fields differ (sweep)");
        for (const uint64_t max : {uint64_t{0}, uint64_t{125}, uint64_t{126}, uint64_t{65536}}) {
          check(ws::check_client_header(h, max) == ref_client_header_code(h, max),
                "check_client_header code differs (sweep)");
        }
      }
    }
  }
  return true;
}

void check_ws(std::string_view input, uint32_t seed) {
  const auto* u = reinterpret_cast<const uint8_t*>(input.data());
  // The input as a client's byte stream, under the default limit and a small one.
  check_ws_stream(input, 64 * 1024, seed);
  check_ws_stream(input, 1 + seed % 256, seed ^ 0x9E3779B9u);
  check_ws_messages(input, seed);

  // Server headers for lengths taken from the input, in each length form.
  uint64_t len = 0;
  for (size_t i = 0; i < std::min<size_t>(8, input.size()); ++i) len = len << 8 | u[i];
  len &= ~(uint64_t{1} << 63);
  const uint8_t op = input.empty() ? 1 : u[0] & 0x0F;
  for (uint64_t n : {len, len % 126, 126 + len % (0x10000 - 126), uint64_t{0xFFFF},
                     uint64_t{0x10000}, (uint64_t{1} << 63) - 1}) {
    check_server_header(op, n);
  }

  check_utf8(input, input.size() >= 2 ? (u[0] | u[1] << 8) : 0, seed);
  check_close(input, seed);

  const std::string key = ws::accept_key(input.substr(0, std::min<size_t>(input.size(), 64)));
  check(key.size() == 28 && key.back() == '=', "accept key is not base64 of 20 bytes");
  // Sec-WebSocket-Key: the base64 of 16 bytes is a key, and only such text is.
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < 16; i += 3) {
    uint32_t v = 0;
    for (size_t j = 0; j < 3; ++j) v = v << 8 | (i + j < 16 && i + j < input.size() ? u[i + j] : 0);
    for (size_t j = 0; j < 4; ++j) b64.push_back(kB64[v >> (18 - 6 * j) & 63]);
  }
  b64.replace(22, 2, "==");
  check(ws::valid_client_key(b64), "refused the base64 of 16 bytes as a key");
  for (const std::string_view k : {input, input.substr(0, 24)}) {
    const bool b64ish = std::all_of(k.begin(), k.begin() + std::min<size_t>(22, k.size()),
                                    [](char c) { return std::strchr(kB64, c) && c != '\0'; });
    check(ws::valid_client_key(k) == (k.size() == 24 && b64ish && k.substr(22) == "=="),
          "valid_client_key verdict differs from RFC 6455 4.2.1");
  }
}

}  // namespace

// The sweep runs once before the first input: inside it, it counted against
// libFuzzer's per-input -timeout (over 10 s at load 15).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  check_ws_exhaustively();
  return 0;
}

// State deltas (PROTOCOL.md "State deltas"): the input cut at its first newline
// into a base body and a new one. The field reader and the applier take any
// bytes; where both are JSON objects with distinct plain keys, the delta the
// server would send must be JSON, and applying it to the base must give the
// new body (as a set of fields: order is not part of a body's meaning).
using FieldSet = std::vector<std::pair<std::string, std::string>>;

bool object_fields(std::string_view text, FieldSet& out) {
  simdjson::dom::element e;
  simdjson::dom::object obj;
  if (oracle().parse(text.data(), text.size()).get(e) || e.get_object().get(obj)) return false;
  out.clear();
  for (auto [k, v] : obj) out.emplace_back(std::string(k), simdjson::minify(v));
  std::sort(out.begin(), out.end());
  return true;
}

void check_state_delta(std::string_view input) {
  const size_t nl = input.find('\n');
  const std::string_view base = input.substr(0, nl);
  const std::string_view next = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  BodyFields bf, nf;
  const bool base_ok = parse_body_fields(base, bf);
  const bool next_ok = parse_body_fields(next, nf);
  for (const auto* f : {&bf, &nf}) {
    const std::string_view text = f == &bf ? base : next;
    for (const auto& field : f->fields) {
      check(size_t{field.key_at} + field.key_len <= text.size() &&
                size_t{field.val_at} + field.val_len <= text.size(),
            "a body field outside its body");
    }
  }
  std::string out;
  apply_state_delta(base, next, {std::string(base.substr(0, 3))}, out);
  if (!base_ok || !next_ok) return;
  FieldSet want, have;
  if (!object_fields(base, have) || !object_fields(next, want)) return;  // not JSON: no meaning to keep
  check(have.size() == bf.fields.size() && want.size() == nf.fields.size(),
        "the field reader and the JSON parser disagree on a body's fields");
  std::string delta = "{";
  append_state_delta(delta, base, bf, next, nf);
  delta += '}';
  simdjson::dom::element e;
  check(!oracle().parse(delta).get(e), "a delta is not JSON");
  std::vector<std::string> unset;
  simdjson::dom::array arr;
  if (!e["unset"].get(arr)) {
    for (auto k : arr) unset.emplace_back(std::string_view(k));
  }
  const std::string set = simdjson::minify(e["body"]);
  check(apply_state_delta(base, set, unset, out), "a delta the applier refuses");
  FieldSet got;
  check(object_fields(out, got), "an applied delta is not a JSON object");
  check(got == want, "applying the delta did not give the new body");
  std::string mp;
  check(append_msgpack_from_json(mp, R"({"op":"sd","sid":1,)" + delta.substr(1)),
        "an sd frame has no MessagePack form");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  uint32_t seed = static_cast<uint32_t>(size);
  for (unsigned char c : input) seed = seed * 31 + c;

  // The input as one frame: under the default limit, and under a small one so
  // the too_large paths (parsed within 4x, refused beyond) run as often.
  decode(input, DecodeLimits{});
  decode(input, DecodeLimits{.max_message_bytes = 1 + seed % 256});
  check_raw_members(input);

  // The input as a MessagePack frame and body, and (when it is JSON) as the
  // same frame sent by a MessagePack client.
  decode_msgpack(input, DecodeLimits{});
  decode_msgpack(input, DecodeLimits{.max_message_bytes = 1 + seed % 256});
  check_msgpack_body(input);
  check_same_in_both(input, DecodeLimits{});

  // The input as a raw TCP stream, as an attacker would send it.
  check_reader(input, 256, seed, DecodeLimits{.max_message_bytes = 64});
  // The input cut at newlines into well-formed frames, so reassembly gets
  // exercised with plausible payloads rather than only with wild lengths.
  std::string wire;
  size_t start = 0;
  for (size_t i = 0; i <= input.size(); ++i) {
    if (i == input.size() || input[i] == '\n') {
      append_length_prefixed(wire, input.substr(start, i - start));
      start = i + 1;
    }
  }
  check_reader(wire, size, seed, DecodeLimits{});

  // The input as WebSocket client frames, and as the parts of frames.
  check_ws(input, seed);

  check_state_delta(input);
  return 0;
}
