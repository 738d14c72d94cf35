// The MessagePack encoding against the JSON one (PROTOCOL.md "Binary encoding:
// MessagePack"): the same ClientOp from both, server frames that msgpack-c
// reads back as the JSON's value tree, `$bin` both ways, and hostile bytes.
#include <gtest/gtest.h>
#include <msgpack/object.hpp>
#include <msgpack/pack.hpp>
#include <msgpack/sbuffer.hpp>
#include <msgpack/unpack.hpp>
#include <simdjson.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "protocol/base64.h"
#include "protocol/decoder.h"
#include "protocol/encoder.h"
#include "protocol/msgpack_decoder.h"
#include "protocol/msgpack_encoder.h"

namespace parley::protocol {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

std::string bytes(const msgpack::sbuffer& b) { return std::string(b.data(), b.size()); }

void str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// A float 64 whatever its value (msgpack-c's pack_double writes 1.0 as 1).
void f64(msgpack::sbuffer& b, double d) {
  uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  char buf[9] = {static_cast<char>(0xcb)};
  for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  b.write(buf, sizeof buf);
}

std::string to_msgpack(std::string_view json) {
  std::string out;
  EXPECT_TRUE(append_msgpack_from_json(out, json)) << json;
  return out;
}

ClientOp decode_json_ok(std::string_view frame, DecodeLimits limits = {}) {
  auto r = decode_client_op(frame, limits);
  if (auto* f = std::get_if<DecodeFailure>(&r)) {
    ADD_FAILURE() << frame << ": " << f->error.msg;
    return {};
  }
  return std::get<ClientOp>(std::move(r));
}

std::variant<ClientOp, DecodeFailure> decode_mp(std::string_view frame, DecodeLimits limits = {}) {
  return decode_client_op_msgpack(frame, limits);
}

ClientOp decode_mp_ok(std::string_view frame, DecodeLimits limits = {}) {
  auto r = decode_mp(frame, limits);
  if (auto* f = std::get_if<DecodeFailure>(&r)) {
    ADD_FAILURE() << "msgpack frame failed: " << wire_name(f->error.code) << ": " << f->error.msg;
    return {};
  }
  return std::get<ClientOp>(std::move(r));
}

DecodeFailure decode_mp_fail(std::string_view frame, DecodeLimits limits = {}) {
  auto r = decode_mp(frame, limits);
  if (std::holds_alternative<ClientOp>(r)) {
    ADD_FAILURE() << "a hostile msgpack frame decoded";
    return {};
  }
  return std::get<DecodeFailure>(std::move(r));
}

void expect_bad_request(std::string_view frame, std::string_view msg) {
  const auto f = decode_mp_fail(frame);
  EXPECT_EQ(f.error.code, ErrorCode::kBadRequest);
  EXPECT_EQ(f.error.msg, msg);
}

// --- the same ClientOp from both encodings -----------------------------------

// Bodies are compared as text: the JSON frames write their floats as the
// MessagePack side does (shortest round-trip form, 3.5e-07), since a float
// has no other text once it is binary.
TEST(MsgpackDecode, EveryOpDecodesAsItsJsonDoes) {
  const char* frames[] = {
      R"({"op":"hello","v":1,"token":"a.b.c","rid":1})",
      R"({"op":"hello","v":1,"api_key":"k-1","enc":"msgpack"})",
      R"({"op":"hello","v":2,"token":"t","enc":"cbor"})",
      R"({"op":"join","ch":"chat:lobby","rid":"r-1"})",
      R"({"op":"join","ch":"chat:lobby","since":57,"rid":-3})",
      R"({"op":"leave","ch":"chat:lobby","rid":18446744073709551615})",
      R"({"op":"leave","topic":"hunt","group":"g1"})",
      R"({"op":"pub","ch":"chat:lobby","id":"c-81","rid":4,"body":{"t":"hi","n":[1,-2,3.5e-07,0.125,1e+300,null,true,false,"é"]}})",
      R"({"op":"pub","ch":"a","id":"x","body":"just a string"})",
      R"({"op":"state","ch":"world:7","key":"pos","pos":[120.5,-3,1e3],"body":{"x":120.5,"y":-3}})",
      R"({"op":"up","ch":"world:7","body":{"kind":"interact","target":17}})",
      R"({"op":"history","ch":"chat:lobby","after":10,"limit":5000})",
      R"({"op":"history","ch":"chat:lobby","before":99})",
      R"({"op":"ping","rid":"p"})",
      R"({"op":"emit","topic":"hunt","events":[{"key":"p1","type":"pick","body":{"item":3}},{"key":"p2","type":"t","id":"e-1","body":[1,2]}]})",
      R"({"op":"tail","topic":"hunt","p":3,"from":"earliest"})",
      R"({"op":"tail","topic":"hunt","from":120})",
      R"({"op":"consume","topic":"hunt","group":"g1","rid":9})",
      R"({"op":"commit","topic":"hunt","group":"g1","gen":2,"p":0,"off":77})",
      R"({"op":"rank","board":"hunt:score","member":"p1","around":500,"round":7})",
      R"({"op":"rank","board":"hunt:score","member":"p1","round":"final"})",
      R"({"op":"ping","unknown":{"deep":[1,{"x":null}]}})",
  };
  for (const char* json : frames) {
    SCOPED_TRACE(json);
    EXPECT_EQ(decode_mp_ok(to_msgpack(json)), decode_json_ok(json));
  }
}

TEST(MsgpackDecode, EveryRefusalIsTheJsonOne) {
  const char* frames[] = {
      R"({"op":"pub","ch":"bad name!","id":"x","body":1,"rid":5})",
      R"({"op":"pub","ch":"a","body":1})",
      R"({"op":"nope"})",
      R"({"op":"join","ch":"a","since":-1})",
      R"({"op":"history","ch":"a"})",
      R"({"op":"state","ch":"a","key":"k","pos":[1],"body":1})",
      R"({"op":"emit","topic":"t","events":[]})",
      R"({"rid":{"x":1},"op":"ping"})",
      R"({"op":"ping","op":"ping"})",
  };
  for (const char* json : frames) {
    SCOPED_TRACE(json);
    auto want = decode_client_op(json, {});
    ASSERT_TRUE(std::holds_alternative<DecodeFailure>(want));
    const auto got = decode_mp_fail(to_msgpack(json));
    EXPECT_EQ(got.error.code, std::get<DecodeFailure>(want).error.code);
    EXPECT_EQ(got.error.msg, std::get<DecodeFailure>(want).error.msg);
    EXPECT_EQ(got.rid, std::get<DecodeFailure>(want).rid);
  }
}

TEST(MsgpackDecode, HelloReadsEnc) {
  EXPECT_EQ(decode_json_ok(R"({"op":"hello","v":1,"token":"t","enc":"msgpack"})").enc,
            Encoding::kMsgpack);
  const auto json = decode_json_ok(R"({"op":"hello","v":1,"token":"t","enc":"json"})");
  EXPECT_EQ(json.enc, Encoding::kJson);
  EXPECT_FALSE(json.enc_unsupported);
  const auto other = decode_json_ok(R"({"op":"hello","v":1,"token":"t","enc":7})");
  EXPECT_EQ(other.enc, Encoding::kJson);
  EXPECT_TRUE(other.enc_unsupported);
}

// Floats keep a fraction or exponent in JSON; float 32 is written in its own
// shortest form, not as the double it widens to.
TEST(MsgpackDecode, NumbersFollowTheMapping) {
  msgpack::sbuffer b;
  Packer pk(b);
  pk.pack_map(4);
  str(pk, "op"), str(pk, "up");
  str(pk, "ch"), str(pk, "w");
  str(pk, "body"), pk.pack_array(6);
  f64(b, 1.0), pk.pack_float(0.1f), f64(b, -0.0), pk.pack_uint64(UINT64_MAX);
  pk.pack_int64(INT64_MIN), f64(b, 1e300);
  str(pk, "rid"), pk.pack_fix_uint32(7);  // a non-shortest integer is still 7
  const auto op = decode_mp_ok(bytes(b));
  EXPECT_EQ(op.body, "[1.0,0.1,-0.0,18446744073709551615,-9223372036854775808,1e+300]");
  EXPECT_EQ(op.rid, "7");
}

// --- limits in the arriving encoding ----------------------------------------

std::string pub_with_bin(size_t n, bool with_rid = true) {
  msgpack::sbuffer b;
  Packer pk(b);
  pk.pack_map(with_rid ? 5 : 4);
  str(pk, "op"), str(pk, "pub");
  str(pk, "ch"), str(pk, "a");
  str(pk, "id"), str(pk, "x");
  if (with_rid) str(pk, "rid"), pk.pack_uint64(3);
  const std::string data(n, '\xab');
  str(pk, "body"), pk.pack_bin(static_cast<uint32_t>(n)), pk.pack_bin_body(data.data(), n);
  return bytes(b);
}

TEST(MsgpackLimits, ABodyIsMeasuredInMessagePackBytes) {
  const DecodeLimits limits{.max_message_bytes = 1000};
  // 900 bytes of bin are 1,200+ of base64: within the limit as it arrived.
  const auto op = decode_mp_ok(pub_with_bin(900), limits);
  EXPECT_GT(op.body.size(), 1200u);
  // The body alone over the limit (frame within 4x): too_large with the rid.
  const auto f = decode_mp_fail(pub_with_bin(1000), limits);
  EXPECT_EQ(f.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(f.rid, "3");
  // Over 4x: refused unread.
  const auto hard = decode_mp_fail(pub_with_bin(4000), limits);
  EXPECT_EQ(hard.error.code, ErrorCode::kTooLarge);
  EXPECT_EQ(hard.rid, "");
}

TEST(MsgpackLimits, AnEventBodyIsMeasuredInMessagePackBytes) {
  auto emit = [](size_t n) {
    msgpack::sbuffer b;
    Packer pk(b);
    pk.pack_map(3);
    str(pk, "op"), str(pk, "emit");
    str(pk, "topic"), str(pk, "t");
    str(pk, "events"), pk.pack_array(2);
    for (size_t size : {size_t{3}, n}) {
      pk.pack_map(3);
      str(pk, "key"), str(pk, "k");
      str(pk, "type"), str(pk, "t");
      const std::string data(size, 'x');
      str(pk, "body"), pk.pack_bin(static_cast<uint32_t>(size)), pk.pack_bin_body(data.data(), size);
    }
    return bytes(b);
  };
  // 450 bytes of bin are 600 of base64, 611 with the $bin object.
  const DecodeLimits limits{.max_message_bytes = 600};
  const auto op = decode_mp_ok(emit(450), limits);
  ASSERT_EQ(op.events.size(), 2u);
  EXPECT_EQ(op.events[1].body.size(), 611u);
  EXPECT_EQ(decode_mp_fail(emit(600), limits).error.code, ErrorCode::kTooLarge);
}

// --- hostile input ------------------------------------------------------------

std::string frame_with(const std::function<void(Packer&)>& value, std::string_view key = "x") {
  msgpack::sbuffer b;
  Packer pk(b);
  pk.pack_map(2);
  str(pk, "op"), str(pk, "ping");
  str(pk, key);
  value(pk);
  return bytes(b);
}

TEST(MsgpackHostile, ExtIsRefusedEverywhere) {
  const std::string ext = frame_with([](Packer& pk) { pk.pack_ext(2, 7), pk.pack_ext_body("ab", 2); });
  expect_bad_request(ext, "ext values are not allowed");
  const std::string in_body =
      frame_with([](Packer& pk) { pk.pack_ext(1, -1), pk.pack_ext_body("a", 1); }, "body");
  expect_bad_request(in_body, "ext values are not allowed");
}

TEST(MsgpackHostile, KeysMustBeStrings) {
  msgpack::sbuffer b;
  Packer pk(b);
  pk.pack_map(2);
  str(pk, "op"), str(pk, "ping");
  pk.pack_uint64(1), pk.pack_nil();
  expect_bad_request(bytes(b), "map keys must be strings");
  // A bin key too, and a map as a key.
  expect_bad_request(frame_with([](Packer& pk) {
    pk.pack_map(1), pk.pack_bin(1), pk.pack_bin_body("k", 1), pk.pack_nil();
  }, "body"), "map keys must be strings");
  expect_bad_request(frame_with([](Packer& pk) {
    pk.pack_map(1), pk.pack_map(0), pk.pack_nil();
  }), "map keys must be strings");
}

TEST(MsgpackHostile, StringsMustBeUtf8) {
  expect_bad_request(frame_with([](Packer& pk) { str(pk, "\xff\xfe"); }), "strings must be valid UTF-8");
  expect_bad_request(frame_with([](Packer& pk) { pk.pack_nil(); }, "\xc0\xaf"),
                     "strings must be valid UTF-8");
}

TEST(MsgpackHostile, FloatsMustBeFinite) {
  for (double d : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    expect_bad_request(frame_with([d](Packer& pk) { pk.pack_double(d); }), "floats must be finite");
    expect_bad_request(frame_with([d](Packer& pk) { pk.pack_float(static_cast<float>(d)); }, "body"),
                       "floats must be finite");
  }
}

TEST(MsgpackHostile, BinOnlyInsideABody) {
  expect_bad_request(frame_with([](Packer& pk) { pk.pack_bin(1), pk.pack_bin_body("a", 1); }),
                     "bin is allowed only inside a body");
  // Under a key named body that is not the frame's body: still outside.
  expect_bad_request(frame_with([](Packer& pk) {
    pk.pack_map(1), str(pk, "body"), pk.pack_bin(1), pk.pack_bin_body("a", 1);
  }), "bin is allowed only inside a body");
  msgpack::sbuffer b;
  Packer pk(b);
  pk.pack_map(4);
  str(pk, "op"), str(pk, "pub");
  str(pk, "ch"), str(pk, "a");
  str(pk, "id"), pk.pack_bin(1), pk.pack_bin_body("a", 1);
  str(pk, "body"), pk.pack_nil();
  expect_bad_request(bytes(b), "bin is allowed only inside a body");
}

TEST(MsgpackHostile, NestingIsBounded) {
  auto nested = [](size_t depth) {
    return frame_with([depth](Packer& pk) {
      for (size_t i = 0; i < depth; ++i) pk.pack_array(1);
      pk.pack_nil();
    }, "body");
  };
  // The frame's map, 1,022 arrays and the nil: 1,024 levels, as in JSON.
  EXPECT_EQ(decode_mp_ok(nested(kMaxMsgpackDepth - 2)).kind, OpKind::kPing);
  expect_bad_request(nested(kMaxMsgpackDepth - 1), "values nest too deep");
  std::string json = R"({"op":"ping","body":)";
  json += std::string(kMaxMsgpackDepth - 1, '[') + "null" + std::string(kMaxMsgpackDepth - 1, ']') + "}";
  EXPECT_TRUE(std::holds_alternative<DecodeFailure>(decode_client_op(json, {})));
  const auto deep = decode_mp_fail(nested(100000), DecodeLimits{.max_message_bytes = 1 << 20});
  EXPECT_EQ(deep.error.msg, "values nest too deep");
}

TEST(MsgpackHostile, HugeDeclaredLengthsAreRefusedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  // array32 / map32 of 2^32-1 elements, str32 / bin32 of 2^32-1 bytes, in a few bytes.
  for (const char* tail : {"\xdd\xff\xff\xff\xff", "\xdf\xff\xff\xff\xff", "\xdb\xff\xff\xff\xff",
                           "\xc6\xff\xff\xff\xff"}) {
    const std::string frame = std::string("\x82\xa2op\xa4ping\xa4" "body", 11) + tail + "ab";
    const auto f = decode_mp_fail(frame);
    EXPECT_EQ(f.error.code, ErrorCode::kBadRequest);
  }
  expect_bad_request(std::string("\x82\xa2op\xa4ping\xa1x\xdd\x00\x01\x00\x00\xc0", 16),
                     "a container declares more elements than the frame holds");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(MsgpackHostile, AFrameIsOneMap) {
  expect_bad_request("", "frame is not valid MessagePack");
  expect_bad_request("\x91\xc0", "frame is not a MessagePack map");
  expect_bad_request("\xa4ping", "frame is not a MessagePack map");
  expect_bad_request("\x07", "frame is not a MessagePack map");
  expect_bad_request(to_msgpack(R"({"op":"ping"})") + "\xc0", "a frame holds one MessagePack value");
  expect_bad_request("\xc1", "frame is not valid MessagePack");  // the never-used byte
}

TEST(MsgpackHostile, EveryTruncationIsBadRequest) {
  const std::string frame = to_msgpack(
      R"({"op":"pub","ch":"chat:lobby","id":"c-81","rid":4,"body":{"t":"hi","n":[1,-2,3.5,null]}})");
  for (size_t n = 0; n < frame.size(); ++n) {
    const auto f = decode_mp_fail(frame.substr(0, n));
    EXPECT_EQ(f.error.code, ErrorCode::kBadRequest) << n;
  }
}

// --- server frames -------------------------------------------------------------

// True when the MessagePack value is the JSON value under the mapping; in a
// body, bin stands for {"$bin": base64}.
bool same_value(const msgpack::object& m, const simdjson::dom::element& j, bool in_body) {
  using T = simdjson::dom::element_type;
  switch (m.type) {
    case msgpack::type::NIL: return j.type() == T::NULL_VALUE;
    case msgpack::type::BOOLEAN: return j.type() == T::BOOL && j.get_bool().value() == m.via.boolean;
    case msgpack::type::POSITIVE_INTEGER:
      return (j.type() == T::INT64 || j.type() == T::UINT64) && j.get_uint64().value() == m.via.u64;
    case msgpack::type::NEGATIVE_INTEGER:
      return j.type() == T::INT64 && j.get_int64().value() == m.via.i64;
    case msgpack::type::FLOAT64: return j.type() == T::DOUBLE && j.get_double().value() == m.via.f64;
    case msgpack::type::STR:
      return j.type() == T::STRING && j.get_string().value() == std::string_view(m.via.str.ptr, m.via.str.size);
    case msgpack::type::BIN: {
      if (!in_body || j.type() != T::OBJECT || j.get_object().size() != 1) return false;
      std::string b64;
      append_base64(b64, std::string_view(m.via.bin.ptr, m.via.bin.size));
      return j["$bin"].get_string().value() == b64;
    }
    case msgpack::type::ARRAY: {
      if (j.type() != T::ARRAY || j.get_array().size() != m.via.array.size) return false;
      size_t i = 0;
      for (auto e : j.get_array()) {
        if (!same_value(m.via.array.ptr[i++], e, in_body)) return false;
      }
      return true;
    }
    case msgpack::type::MAP: {
      if (j.type() != T::OBJECT || j.get_object().size() != m.via.map.size) return false;
      size_t i = 0;
      for (auto [k, v] : j.get_object()) {
        const auto& kv = m.via.map.ptr[i++];
        if (kv.key.type != msgpack::type::STR ||
            std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) != k ||
            !same_value(kv.val, v, in_body || k == "body")) {
          return false;
        }
      }
      return true;
    }
    default: return false;  // FLOAT32, EXT: never written
  }
}

void expect_same_frame(const std::string& json) {
  SCOPED_TRACE(json);
  const std::string mp = to_msgpack(json);
  const msgpack::object_handle oh = msgpack::unpack(mp.data(), mp.size());
  simdjson::dom::parser parser;
  const simdjson::dom::element j = parser.parse(json).value();
  EXPECT_TRUE(same_value(oh.get(), j, false));
}

TEST(MsgpackEncode, EveryServerFrameReadsBackAsItsJson) {
  std::vector<std::string> frames;
  auto add = [&](auto&& encode) {
    std::string out;
    encode(out);
    frames.push_back(std::move(out));
  };
  const MsgView m{.ch = "chat:lobby", .seq = 57, .from = "u1", .id = "c-81", .ts_ms = 1764460800123,
                  .body = R"({"t":"hi","n":[1.5,-2,18446744073709551615],"z":{"$bin":"AAEC"}})"};
  add([&](std::string& o) { encode_msg(o, m); });
  add([&](std::string& o) {
    std::string list;
    append_msg(list, m);
    append_msg(list, MsgView{.ch = "a", .seq = 58, .from = "u2", .id = "i", .ts_ms = 1, .body = "null"});
    encode_batch(o, list);
  });
  const Position pos{{120.5, -3, 0}, 2};
  add([&](std::string& o) { encode_state(o, "world:7", "u1", "pos", R"({"x":1e3})", &pos); });
  const std::vector<std::string> join{"u1", "u2"}, none;
  add([&](std::string& o) { encode_presence(o, "world:7", join, none); });
  add([&](std::string& o) { encode_direct(o, R"({"gift":3,"blob":{"$bin":""}})"); });
  add([&](std::string& o) { encode_welcome(o, "1", "c81", "u1", "demo", 25000); });
  const std::span<const std::string> members(join);
  add([&](std::string& o) { encode_joined(o, R"("j")", "chat:lobby", 57, true, &members, 3); });
  add([&](std::string& o) { encode_left(o, "4", "a"); });
  add([&](std::string& o) { encode_left_topic(o, "", "hunt", "g"); });
  add([&](std::string& o) { encode_ack(o, R"("r\"1")", "a", "x\\y\n", 18446744073709551615u, true); });
  add([&](std::string& o) {
    std::string list;
    append_msg(list, m);
    encode_history(o, "8", "a", list);
  });
  add([&](std::string& o) { encode_pong(o, "-5", 1764460800123); });
  add([&](std::string& o) { encode_error(o, "3", Error{ErrorCode::kRateLimited, "slow down", 200}); });
  add([&](std::string& o) { encode_out_of_range(o, "7", "below retention", OffsetRange{3, 41, 100}); });
  const std::vector<std::pair<uint32_t, uint64_t>> offs{{0, 5}, {3, 9}};
  add([&](std::string& o) { encode_emitted(o, "2", "hunt", offs, std::vector<bool>{false, true}); });
  add([&](std::string& o) { encode_tailing(o, "2", "hunt", offs); });
  add([&](std::string& o) { encode_assigned(o, "", "hunt", "g", 4, offs); });
  const std::vector<uint32_t> parts{1, 2};
  add([&](std::string& o) { encode_revoked(o, "hunt", "g", 4, parts); });
  const std::vector<RankView> ranks{{"p1", 930, 1}, {"p2", 12.5, 2}};
  add([&](std::string& o) { encode_ranks(o, "1", "hunt:score", "r7", true, ranks); });
  add([&](std::string& o) { encode_committed(o, "1"); });
  add([&](std::string& o) { encode_bye(o, "draining", 500); });
  for (const auto& f : frames) expect_same_frame(f);
}

TEST(MsgpackEncode, ArrayHeadersTakeTheShortestForm) {
  for (uint32_t n : {0u, 15u, 16u, 65535u, 65536u}) {
    std::string h;
    append_msgpack_array_header(h, n);
    EXPECT_EQ(h.size(), n < 16 ? 1u : n < 65536 ? 3u : 5u);
    std::string frame = h;
    for (uint32_t i = 0; i < n; ++i) frame += '\xc0';
    const auto oh = msgpack::unpack(frame.data(), frame.size());
    EXPECT_EQ(oh.get().via.array.size, n);
  }
}

// --- $bin -------------------------------------------------------------------------

TEST(MsgpackBin, BinBecomesBase64AndBackInBodies) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{256}}) {
    msgpack::sbuffer b;
    Packer pk(b);
    pk.pack_map(1);
    str(pk, "blob"), pk.pack_bin(static_cast<uint32_t>(n)), pk.pack_bin_body(all.data(), n);
    std::string json;
    ASSERT_FALSE(msgpack_body_to_json(bytes(b), json));
    std::string b64;
    append_base64(b64, all.substr(0, n));
    EXPECT_EQ(json, R"({"blob":{"$bin":")" + b64 + R"("}})");
    std::string back;
    ASSERT_TRUE(append_msgpack_from_json(back, json, true));
    EXPECT_EQ(back, bytes(b));  // the same bytes a MessagePack client sent
  }
}

TEST(MsgpackBin, OnlyAnExactBase64ObjectBecomesBin) {
  auto type_of = [](std::string_view body) {
    std::string mp;
    EXPECT_TRUE(append_msgpack_from_json(mp, body, true));
    return msgpack::unpack(mp.data(), mp.size()).get().type;
  };
  EXPECT_EQ(type_of(R"({"$bin":"AAE="})"), msgpack::type::BIN);
  EXPECT_EQ(type_of(R"({"$bin":"AAE"})"), msgpack::type::MAP);   // unpadded
  EXPECT_EQ(type_of(R"({"$bin":"AAF="})"), msgpack::type::MAP);  // unused bits set
  EXPECT_EQ(type_of(R"({"$bin":"A-E="})"), msgpack::type::MAP);  // url alphabet
  EXPECT_EQ(type_of(R"({"$bin":" AAE="})"), msgpack::type::MAP);
  EXPECT_EQ(type_of(R"({"$bin":1})"), msgpack::type::MAP);
  EXPECT_EQ(type_of(R"({"$bin":"AAE=","x":1})"), msgpack::type::MAP);
  // Outside a body a `$bin` object is data like any other.
  std::string mp;
  ASSERT_TRUE(append_msgpack_from_json(mp, R"({"op":"x","meta":{"$bin":"AAE="}})"));
  EXPECT_EQ(msgpack::unpack(mp.data(), mp.size()).get().via.map.ptr[1].val.type, msgpack::type::MAP);
}

TEST(MsgpackBin, Base64IsStrict) {
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode(""), "");
  for (const char* bad : {"Zm9vYg=", "Zm9vY===", "Zm9v\nYg==", "Zm=vYg==", "Zm9vYh==", "====", "Z"}) {
    EXPECT_FALSE(base64_decode(bad)) << bad;
  }
}

TEST(MsgpackEncode, RefusesTextThatIsNotJson) {
  std::string out = "kept";
  EXPECT_FALSE(append_msgpack_from_json(out, "{"));
  EXPECT_EQ(out, "kept");
}

}  // namespace
}  // namespace parley::protocol
