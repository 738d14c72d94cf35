// libFuzzer target for everything a client's bytes reach before the session
// sees them: the TCP framing, the frame decoder, and the body scanner it relies
// on. Besides crashes and sanitizer reports it checks invariants, because a
// decoder that never crashes can still hand the hub a bad channel name or a
// body that is not JSON. Build and run with tests/fuzz/run_fuzz.sh.
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "protocol/raw_member.h"
#include "protocol/tcp_framing.h"

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

bool has_channel(OpKind k) { return k != OpKind::kHello && k != OpKind::kPing; }
bool has_body(OpKind k) { return k == OpKind::kPub || k == OpKind::kState || k == OpKind::kUp; }

void check_op(const ClientOp& op, std::string_view frame, const DecodeLimits& limits) {
  check(frame.size() <= limits.max_message_bytes, "accepted an oversized frame");
  check(is_rid(op.rid), "rid is not an integer or string");
  if (has_channel(op.kind)) check(is_valid_channel(op.ch), "accepted a bad channel name");
  if (op.kind == OpKind::kPub) check(!op.id.empty(), "accepted an empty id");
  if (op.kind == OpKind::kState) check(!op.key.empty(), "accepted an empty key");
  if (op.kind == OpKind::kHistory) {
    check(op.after.has_value() != op.before.has_value(), "history without exactly one bound");
    check(op.limit >= 1 && op.limit <= kHistoryMaxLimit, "history limit out of range");
  }
  if (has_body(op.kind)) {
    check(is_json(op.body), "body is not JSON");
    check(is_minified(op.body), "body is not minified");
    check(op.body.size() <= limits.max_message_bytes, "accepted an oversized body");
    std::string out;
    encode_msg(out, {.ch = op.ch, .seq = 1, .from = "u", .id = op.id, .ts_ms = 1, .body = op.body});
    check(is_json(out), "encoded msg is not JSON");
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  uint32_t seed = static_cast<uint32_t>(size);
  for (unsigned char c : input) seed = seed * 31 + c;

  // The input as one frame: under the default limit, and under a small one so
  // the too_large paths (parsed within 4x, refused beyond) run as often.
  decode(input, DecodeLimits{});
  decode(input, DecodeLimits{.max_message_bytes = 1 + seed % 256});
  check_raw_members(input);

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
  return 0;
}
