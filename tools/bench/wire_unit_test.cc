// The bench's MessagePack wire and its state-delta audit (msgpack_wire.h,
// msgpack_frame.h, delta_audit.h), written from PROTOCOL.md alone: a frame
// packed and read natively gives what the JSON reader gives; deltas rebuild
// bodies by the page's rule in both encodings, and the audit refuses a delta
// without a base or one that rebuilds another sender's body; the ideal counts
// the bytes of what changed.
#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <string>
#include <vector>

#include "delta_audit.h"
#include "msgpack_frame.h"
#include "msgpack_wire.h"
#include "server_frame.h"

namespace bench {
namespace {

struct Seen {
  Op op;
  std::string ch, from, key;
  uint64_t sid, seq;
  int64_t t, rid;
  bool has_body, has_pos;
};

std::vector<Seen> read_json(std::string json) {
  FrameReader r;
  std::vector<Seen> out;
  const size_t n = json.size();
  json.resize(n + simdjson::SIMDJSON_PADDING);
  EXPECT_TRUE(r.read(json.data(), n, json.size(), [&](const Event& e) {
    out.push_back({e.op, std::string(e.ch), std::string(e.from), std::string(e.key), e.sid, e.seq,
                   e.sent_ns, e.rid, !e.body.empty(), !e.pos.empty()});
  }));
  return out;
}

std::vector<Seen> read_mp(const std::string& mp, bool expect_ok = true) {
  MsgpackFrameReader r;
  std::vector<Seen> out;
  EXPECT_EQ(r.read(mp.data(), mp.size(), [&](const Event& e) {
    out.push_back({e.op, std::string(e.ch), std::string(e.from), std::string(e.key), e.sid, e.seq,
                   e.sent_ns, e.rid, e.mp_body != nullptr, e.mp_pos != nullptr});
  }), expect_ok);
  return out;
}

void expect_same(const std::vector<Seen>& a, const std::vector<Seen>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].op, b[i].op) << i;
    EXPECT_EQ(a[i].ch, b[i].ch) << i;
    EXPECT_EQ(a[i].from, b[i].from) << i;
    EXPECT_EQ(a[i].key, b[i].key) << i;
    EXPECT_EQ(a[i].sid, b[i].sid) << i;
    EXPECT_EQ(a[i].seq, b[i].seq) << i;
    EXPECT_EQ(a[i].t, b[i].t) << i;
    EXPECT_EQ(a[i].rid, b[i].rid) << i;
    EXPECT_EQ(a[i].has_body, b[i].has_body) << i;
    EXPECT_EQ(a[i].has_pos, b[i].has_pos) << i;
  }
}

std::string packed(std::string_view json) {
  std::string mp;
  EXPECT_TRUE(mpk::pack_json(json, mp)) << json;
  return mp;
}

TEST(MsgpackFrame, ReadsWhatTheJsonReaderReads) {
  const std::string batch =
      R"([{"op":"state","tick":9,"ts":1764460800123,"sid":7,"ch":"world:1","from":"u42","key":"pos","pos":[1.5,-2],"body":{"t":1764460800123,"x":-5,"y":42}},)"
      R"({"op":"sd","tick":10,"ts":1764460800143,"sid":7,"pos":[2,-2],"body":{"t":1764460800143}},)"
      R"({"op":"msg","ch":"world:1","seq":12,"id":"99","from":"u1","body":{"t":77,"p":"a\"b"}},)"
      R"({"op":"ack","rid":3,"seq":12,"id":"99"}])";
  const auto want = read_json(batch);
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(want[1].op, Op::kSd);
  EXPECT_EQ(want[1].t, 1764460800143);
  expect_same(read_mp(packed(batch)), want);
  const std::string page =
      R"({"op":"history","rid":4,"ch":"c:1","msgs":[{"op":"msg","ch":"c:1","seq":1,"body":{"t":5}},{"op":"msg","ch":"c:1","seq":2,"body":{"t":6}}]})";
  const auto hist = read_mp(packed(page));
  expect_same(hist, read_json(page));
  ASSERT_EQ(hist.size(), 3u);
  EXPECT_EQ(hist[0].op, Op::kHistoryMsg);
  EXPECT_EQ(hist[2].op, Op::kHistory);
  const std::string mp = packed(batch);
  read_mp(mp.substr(0, mp.size() - 1), false);  // truncated
  read_mp(mp + mp, false);                      // two values
  read_mp(std::string("\x81\x01\x02", 3), false);  // a key that is not str
}

// PROTOCOL.md "Batched state deltas": each entry of an sds is read as the sd
// it stands for, in order, in both encodings; a malformed `d` fails the frame.
TEST(MsgpackFrame, AnSdsIsReadAsItsEntries) {
  const std::string batch =
      R"([{"op":"state","tick":9,"ts":1764460800123,"sid":7,"ch":"world:1","from":"u42","key":"pos","body":{"t":10,"x":-5,"y":42}},)"
      R"({"op":"sds","tick":10,"ts":1764460800143,"d":[7,{"t":11,"x":2},9,[[2,-2],{"t":12}],12,[null,{"t":13},["name"]]]},)"
      R"({"op":"msg","ch":"world:1","seq":12,"id":"99","from":"u1","body":{"t":77}}])";
  const auto want = read_json(batch);
  ASSERT_EQ(want.size(), 6u);
  EXPECT_EQ(want[1].op, Op::kSd);
  EXPECT_EQ(want[1].sid, 7u);
  EXPECT_EQ(want[1].t, 11);
  EXPECT_FALSE(want[1].has_pos);
  EXPECT_EQ(want[2].sid, 9u);
  EXPECT_TRUE(want[2].has_pos);
  EXPECT_EQ(want[2].t, 12);
  EXPECT_EQ(want[3].sid, 12u);
  EXPECT_EQ(want[3].t, 13);
  EXPECT_FALSE(want[3].has_pos);
  EXPECT_EQ(want[4].op, Op::kOther) << "the sds itself, after its entries";
  EXPECT_EQ(want[5].op, Op::kMsg);
  expect_same(read_mp(packed(batch)), want);

  // The unset of an entry reaches the audit, which rebuilds the body with it.
  FrameReader r;
  std::string one = R"({"op":"sds","ts":1,"d":[12,[null,{"t":13},["name"]]]})";
  const size_t n = one.size();
  one.resize(n + simdjson::SIMDJSON_PADDING);
  std::string unset;
  EXPECT_TRUE(r.read(one.data(), n, one.size(), [&](const Event& e) {
    if (e.op == Op::kSd) unset = std::string(e.unset);
  }));
  EXPECT_EQ(unset, R"(["name"])");

  for (const char* bad : {R"({"op":"sds","d":[7]})", R"({"op":"sds","d":[0,{}]})", R"({"op":"sds","d":[7,5]})",
                          R"({"op":"sds","d":[]})", R"({"op":"sds","d":[7,[null]]})",
                          R"({"op":"sds","d":[7,[5,{}]]})", R"({"op":"sds","d":[7,[null,{},"x"]]})",
                          R"({"op":"sds","d":[7,[null,{},[],1]]})", R"({"op":"sds","d":[-1,{}]})"}) {
    std::string j = bad;
    const size_t len = j.size();
    j.resize(len + simdjson::SIMDJSON_PADDING);
    EXPECT_FALSE(r.read(j.data(), len, j.size(), [](const Event&) {})) << bad;
    read_mp(packed(bad), false);
  }
}

msgpack::object_handle mp_value(std::string_view json) {
  const std::string mp = packed(json);
  return msgpack::unpack(mp.data(), mp.size());
}

TEST(DeltaAudit, RebuildsBodiesAndRefusesWhatCannotBeRight) {
  DeltaStreams s;
  int64_t t = 0;
  EXPECT_FALSE(s.apply(7, R"({"x":1})", "", t)) << "no base";
  ASSERT_TRUE(s.full(7, "u42", R"({"t":10,"x":1,"y":42,"name":"ann"})"));
  ASSERT_TRUE(s.apply(7, R"({"t":11,"x":2})", "", t));
  EXPECT_EQ(t, 11);
  ASSERT_TRUE(s.apply(7, R"({"t":12})", R"(["name"])", t));
  EXPECT_EQ(t, 12);
  EXPECT_FALSE(s.apply(7, R"({"t":13,"y":43})", "", t)) << "y is not u42's: a wrong base";
  EXPECT_FALSE(s.apply(7, R"({"t":14})", R"(["x"])", t)) << "a bench body lost its x";
  EXPECT_FALSE(s.apply(7, "[1]", "", t)) << "not an object";
  s.clear();
  EXPECT_FALSE(s.apply(7, R"({"t":15})", "", t)) << "a new connection has no bases";
}

TEST(DeltaAudit, TheSameInMessagePack) {
  DeltaStreams s;
  int64_t t = 0;
  auto base = mp_value(R"({"t":10,"x":1,"y":42,"name":"ann"})");
  EXPECT_FALSE(s.apply(7, mp_value(R"({"x":1})").get(), nullptr, t)) << "no base";
  ASSERT_TRUE(s.full(7, "u42", base.get()));
  ASSERT_TRUE(s.apply(7, mp_value(R"({"t":11,"x":2})").get(), nullptr, t));
  EXPECT_EQ(t, 11);
  auto unset = mp_value(R"(["name"])");
  ASSERT_TRUE(s.apply(7, mp_value(R"({"t":12})").get(), &unset.get(), t));
  EXPECT_EQ(t, 12);
  EXPECT_FALSE(s.apply(7, mp_value(R"({"t":13,"y":43})").get(), nullptr, t)) << "a wrong base";
  auto unset_x = mp_value(R"(["x"])");
  EXPECT_FALSE(s.apply(7, mp_value(R"({"t":14})").get(), &unset_x.get(), t)) << "lost its x";
  EXPECT_FALSE(s.apply(7, mp_value("[1]").get(), nullptr, t)) << "not a map";
}

// PROTOCOL.md's test vectors, counted: the ideal is the changed fields' bytes.
TEST(DeltaAudit, TheIdealIsWhatChanged) {
  DeltaStreams s;
  int64_t t = 0;
  uint64_t ideal = 0;
  ASSERT_TRUE(s.full(1, "b", R"({"a":1,"b":2,"name":"ann"})", &ideal));
  EXPECT_EQ(ideal, std::string(R"("a":1"b":2"name":"ann")").size()) << "first delivery: all of it";
  ASSERT_TRUE(s.apply(1, R"({"a":1.5})", "", t, &ideal));
  EXPECT_EQ(ideal, std::string(R"("a":1.5)").size());
  ASSERT_TRUE(s.apply(1, R"({})", "", t, &ideal));
  EXPECT_EQ(ideal, 0u) << "the same body again";
  ASSERT_TRUE(s.apply(1, R"({"a":1.5,"emote":"wave"})", R"(["name"])", t, &ideal));
  EXPECT_EQ(ideal, std::string(R"("emote":"wave""name":)").size()) << "a did not change";
  // A full body against the viewer's last one (it missed nothing): what differs.
  ASSERT_TRUE(s.full(1, "b", R"({"a":2,"b":2,"emote":"wave"})", &ideal, "[3,4]"));
  EXPECT_EQ(ideal, std::string(R"("a":2"pos":[3,4])").size());
  // Without sids, by sender and key, in MessagePack: str header + key + value.
  EXPECT_EQ(s.observe("b", "pos", mp_value(R"({"x":1,"y":2})").get(), nullptr), 2u + 2u + 2u);
  EXPECT_EQ(s.observe("b", "pos", mp_value(R"({"x":300,"y":2})").get(), nullptr), 2u + 3u);
  EXPECT_EQ(s.observe("c", "pos", mp_value(R"({"x":300,"y":2})").get(), nullptr), 2u + 3u + 2u + 1u);
  auto pos = mp_value("[1.5,2]");
  EXPECT_EQ(s.observe("c", "pos", mp_value(R"({"x":300,"y":2})").get(), &pos.get()), 4u + 1u + 9u + 1u);
}

}  // namespace
}  // namespace bench
