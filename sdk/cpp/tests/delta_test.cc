// PROTOCOL.md "State deltas" in the C++ SDK: the page's test vectors through
// the applier and through a client on the fake transport, and what the client
// does with an `sd` it cannot apply (drops it, reports bad_frame, re-joins the
// channel with since; never invents a body).
#include <gtest/gtest.h>

#include "fake_transport.h"
#include "state_streams.h"

namespace parley::testing {
namespace {

// base, the sd's fields after sid, applied (PROTOCOL.md's table).
const char* const kVectors[][3] = {
    {R"({"x":1,"y":2,"name":"ann"})", R"({"body":{"x":1.5}})", R"({"x":1.5,"y":2,"name":"ann"})"},
    {R"({"x":1})", R"({"body":{}})", R"({"x":1})"},
    {R"({"x":1,"hp":9,"fx":null})", R"({"body":{"x":1.0,"emote":"wave"},"unset":["fx"]})",
     R"({"x":1.0,"hp":9,"emote":"wave"})"},
    {R"({"inv":[1,2],"o":{"a":1,"b":2}})", R"({"body":{"o":{"a":1,"b":3}}})", R"({"inv":[1,2],"o":{"a":1,"b":3}})"},
    {R"({"a":1})", R"({"body":{},"unset":["a"]})", R"({})"},
};

TEST(StateDelta, TheTestVectorsApply) {
  for (const auto& v : kVectors) {
    const Json base = Json::parse(v[0]);
    const Json sd = Json::parse(v[1]);
    Json out;
    std::string why;
    const Json* unset = sd.contains("unset") ? &sd["unset"] : nullptr;
    ASSERT_TRUE(detail::apply_state_delta(base, sd["body"], unset, out, why)) << v[1] << why;
    EXPECT_EQ(out, Json::parse(v[2])) << v[1];
    EXPECT_EQ(out.dump(), Json::parse(v[2]).dump()) << "1.0 stays a float: " << v[1];
  }
  Json out;
  std::string why;
  const Json obj = Json::object();
  const Json strs = Json::array({"a"});
  EXPECT_FALSE(detail::apply_state_delta(Json::array(), obj, nullptr, out, why));
  EXPECT_FALSE(detail::apply_state_delta(obj, Json(1), nullptr, out, why));
  const Json bad_unset = Json::array({1});
  EXPECT_FALSE(detail::apply_state_delta(obj, obj, &bad_unset, out, why));
  const Json str_unset = Json("a");
  EXPECT_FALSE(detail::apply_state_delta(obj, obj, &str_unset, out, why));
  EXPECT_TRUE(detail::apply_state_delta(Json::parse(R"({"a":1,"b":2})"), Json::parse(R"({"a":3})"), &strs, out, why));
  EXPECT_EQ(out, Json::parse(R"({"a":3,"b":2})")) << "a key both unset and set is set";
}

struct DeltaClient {
  Harness h{[](ClientOptions& o) { o.state_deltas = true; }};
  Channel ch = h.client->channel("world:7");
  std::vector<State> got;
  std::vector<Error> errors;
  DeltaClient() {
    ch.on_state([this](const State& s) { got.push_back(s); });
    h.client->on_error([this](const Error& e) { errors.push_back(e); });
    ch.join();
    h.t->open();
    h.poll();
    auto hello = h.t->sent("hello");
    EXPECT_EQ(hello.back()["caps"], Json::array({"state_delta"}));
    h.t->frame({{"op", "welcome"}, {"rid", hello.back()["rid"]}, {"conn", "c1"}, {"user", "u1"},
                {"tenant", "demo"}, {"heartbeat_ms", 25000}, {"caps", {"state_delta"}}});
    h.poll();
    h.joined("world:7", 5);
  }
  void frame(const char* text) {
    h.t->frame(Json::parse(text));
    h.poll();
  }
};

TEST(StateDelta, TheExchangeAndTheVectorsReachTheApplicationAsFullStates) {
  DeltaClient c;
  EXPECT_TRUE(c.h.client->welcome().state_deltas);
  c.frame(R"({"op":"state","tick":100,"ts":1764460800000,"sid":1,"ch":"world:7","from":"b","key":"pos","body":{"x":1,"y":2}})");
  c.frame(R"({"op":"sd","tick":101,"ts":1764460800020,"sid":1,"body":{"x":2}})");
  ASSERT_EQ(c.got.size(), 2u);
  EXPECT_EQ(c.got[1].body, Json::parse(R"({"x":2,"y":2})"));
  EXPECT_EQ(c.got[1].from, "b");
  EXPECT_EQ(c.got[1].key, "pos");
  EXPECT_EQ(c.got[1].tick, 101);
  EXPECT_EQ(c.got[1].ts, 1764460800020);
  EXPECT_EQ(c.got[0].tick, 100);
  int sid = 10;
  for (const auto& v : kVectors) {
    Json full = {{"op", "state"}, {"sid", sid}, {"ch", "world:7"}, {"from", "v"}, {"key", "k"}, {"body", Json::parse(v[0])}};
    Json sd = Json::parse(v[1]);
    sd["op"] = "sd";
    sd["sid"] = sid++;
    sd["pos"] = {1, 2};
    c.h.t->frame(Json::array({full, sd}));
    c.h.poll();
    ASSERT_FALSE(c.got.empty());
    EXPECT_EQ(c.got.back().body, Json::parse(v[2])) << v[1];
    EXPECT_EQ(c.got.back().pos, Json::array({1, 2}));
  }
  EXPECT_TRUE(c.errors.empty());
}

TEST(StateDelta, AnSdWithoutABaseIsDroppedReportedAndTheChannelRejoined) {
  DeltaClient c;
  c.frame(R"({"op":"sd","sid":99,"body":{"x":1}})");
  EXPECT_TRUE(c.got.empty()) << "no state was invented";
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0].code, "bad_frame");
  ASSERT_EQ(c.h.t->sent("leave").size(), 1u);
  auto joins = c.h.t->sent("join");
  ASSERT_EQ(joins.size(), 2u);
  EXPECT_EQ(joins[1]["since"], 5);
  c.h.joined("world:7", 5);
  c.frame(R"({"op":"state","sid":99,"ch":"world:7","from":"b","key":"pos","body":{"x":1,"y":1}})");
  c.frame(R"({"op":"sd","sid":99,"body":{"y":2}})");
  ASSERT_EQ(c.got.size(), 2u);
  EXPECT_EQ(c.got[1].body, Json::parse(R"({"x":1,"y":2})"));
}

TEST(StateDelta, HostileSdFramesAreRefusedNeverDelivered) {
  const char* hostile[] = {
      R"({"op":"sd","sid":1,"body":"x"})",           R"({"op":"sd","sid":1,"body":[1]})",
      R"({"op":"sd","sid":1})",                      R"({"op":"sd","sid":1,"body":{},"unset":"x"})",
      R"({"op":"sd","sid":1,"body":{},"unset":[1]})", R"({"op":"sd","sid":"1","body":{}})",
      R"({"op":"sd","sid":-1,"body":{}})",           R"({"op":"sd","sid":1.5,"body":{}})",
      R"({"op":"sd","body":{}})",                    R"({"op":"sd","sid":18446744073709551615,"body":{}})",
  };
  for (const char* f : hostile) {
    DeltaClient c;
    c.frame(R"({"op":"state","sid":1,"ch":"world:7","from":"b","key":"pos","body":{"x":1}})");
    c.frame(f);
    EXPECT_EQ(c.got.size(), 1u) << f;
    ASSERT_EQ(c.errors.size(), 1u) << f;
    EXPECT_EQ(c.errors[0].code, "bad_frame") << f;
    EXPECT_EQ(c.h.t->sent("join").size(), 2u) << f << ": re-joined";
    c.h.joined("world:7", 5);
    c.frame(R"({"op":"sd","sid":1,"body":{"x":2}})");
    EXPECT_EQ(c.got.size(), 1u) << f << ": no delta on a dropped base";
  }
}

TEST(StateDelta, AnSdSentBeforeTheServerSawALeaveIsDroppedQuietly) {
  DeltaClient c;
  c.frame(R"({"op":"state","sid":1,"ch":"world:7","from":"b","key":"pos","body":{"x":1}})");
  c.ch.leave();
  c.h.poll();
  c.frame(R"({"op":"sd","sid":1,"body":{"x":2}})");
  EXPECT_EQ(c.got.size(), 1u);
  EXPECT_TRUE(c.errors.empty());
}

TEST(StateDelta, WithoutTheOptionTheHelloAsksForNothing) {
  Harness h;
  h.client->connect();
  h.welcome();
  EXPECT_FALSE(h.t->sent("hello").back().contains("caps"));
  EXPECT_FALSE(h.client->welcome().state_deltas);
}

TEST(StateDelta, StreamsAreBoundedLeastRecentlyUsedFirst) {
  detail::StateStreams s;
  Json f = {{"op", "state"}, {"ch", "c"}, {"from", "b"}, {"key", "k"}, {"body", {{"x", 1}}}};
  for (int64_t sid = 1; sid <= static_cast<int64_t>(detail::StateStreams::kMaxStreams) + 10; sid++) {
    f["sid"] = sid;
    s.full(f);
    if (sid == static_cast<int64_t>(detail::StateStreams::kMaxStreams)) {
      EXPECT_EQ(s.take({{"op", "sd"}, {"sid", 1}, {"body", Json::object()}}).kind, detail::StateStreams::Taken::applied);
    }
  }
  EXPECT_EQ(s.size(), detail::StateStreams::kMaxStreams);
  EXPECT_EQ(s.take({{"op", "sd"}, {"sid", 1}, {"body", Json::object()}}).kind, detail::StateStreams::Taken::applied)
      << "used recently: kept";
  EXPECT_EQ(s.take({{"op", "sd"}, {"sid", 2}, {"body", Json::object()}}).kind, detail::StateStreams::Taken::unknown);
}

}  // namespace
}  // namespace parley::testing
