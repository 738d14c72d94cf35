// What members of a channel receive (PROTOCOL.md "Server frames" and "Ticks,
// batching and coalescing"): state, presence, and tick batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

class DeliveryTest : public SharedServerTest<DeliveryTest> {
 public:
  static ServerSpec server_spec() {
    // world (presence, tick 20) comes with the default tenants.
    return spec_with_tenants(default_tenants_toml(
        "publish_per_conn_sec = 0\n"
        "[tenants.demo.namespaces.slow]\ndurable = false\ntick_ms = 200\n"
        "[tenants.demo.namespaces.tick]\ndurable = false\ntick_ms = 100\npresence = false\n"
        "[tenants.demo.namespaces.now]\ndurable = false\ntick_ms = 0\npresence = false\n"
        "[tenants.demo.namespaces.lazy]\ndurable = false\ntick_ms = 10000\npresence = false\n"));
  }

 protected:
  static void pub(Client& c, const std::string& ch, const std::string& id,
                  const std::string& body = "1") {
    c.send(pub_frame(ch, id, body));
  }

  static void state(Client& c, const std::string& ch, const std::string& key,
                    const std::string& body) {
    c.send(R"({"op":"state","ch":")" + ch + R"(","key":")" + key + R"(","body":)" + body + "}");
  }

  static std::vector<std::string> with_op(const std::vector<std::string>& objs,
                                          const std::string& op) {
    std::vector<std::string> out;
    for (const auto& o : objs) {
      if (op_of(o) == op) out.push_back(o);
    }
    return out;
  }
};

// ---- state ----

TEST_F(DeliveryTest, StateGoesToEveryOtherMember) {
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  auto c = connect_as("carol");
  for (auto* x : {a.get(), b.get(), c.get()}) x->join("world:state");
  state(*a, "world:state", "pos", R"({"x":1,"y":2})");
  for (auto* x : {b.get(), c.get()}) {
    EXPECT_EQ(without_server_time(x->expect("state")),
              R"({"op":"state","ch":"world:state","from":"alice","key":"pos","body":{"x":1,"y":2}})");
  }
}

TEST_F(DeliveryTest, StateIsNotEchoedToItsSender) {
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  a->join("world:no-echo");
  b->join("world:no-echo");
  state(*a, "world:no-echo", "pos", "1");
  ASSERT_FALSE(b->expect("state").empty());
  // The state went out before this msg, so an echo would arrive before it.
  pub(*a, "world:no-echo", "after-state");
  EXPECT_TRUE(with_op(until_msg(*a, "after-state"), "state").empty());
}

TEST_F(DeliveryTest, StatesWithTheSameKeyWithinATickAreCoalescedLatestWins) {
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  a->join("slow:coalesce");
  b->join("slow:coalesce");
  // Align with a tick: this state arrives right after a tick fired, so the
  // next five are sent well within the following 200 ms tick.
  state(*a, "slow:coalesce", "sync", "0");
  ASSERT_FALSE(b->expect("state").empty());
  for (int i = 1; i <= 5; ++i) state(*a, "slow:coalesce", "pos", std::to_string(i));
  pub(*a, "slow:coalesce", "sentinel");
  auto states = with_op(until_msg(*b, "sentinel"), "state");
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(without_server_time(states[0]), R"({"op":"state","ch":"slow:coalesce","from":"alice","key":"pos","body":5})");
}

TEST_F(DeliveryTest, StatesWithDifferentKeysWithinATickAreAllDelivered) {
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  a->join("slow:keys");
  b->join("slow:keys");
  state(*a, "slow:keys", "pos", "1");
  state(*a, "slow:keys", "hp", "2");
  pub(*a, "slow:keys", "sentinel");
  auto states = with_op(until_msg(*b, "sentinel"), "state");
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(json_str(states[0], "key"), "pos");
  EXPECT_EQ(json_str(states[1], "key"), "hp");
}

TEST_F(DeliveryTest, StatesOfDifferentSendersWithTheSameKeyAreAllDelivered) {
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  auto c = connect_as("carol");
  for (auto* x : {a.get(), b.get(), c.get()}) x->join("slow:senders");
  state(*a, "slow:senders", "pos", "1");
  state(*b, "slow:senders", "pos", "2");
  // Both sentinels must arrive: each sender's state went out before its own.
  pub(*a, "slow:senders", "sentinel-a");
  pub(*b, "slow:senders", "sentinel-b");
  std::vector<std::string> states;
  for (int sentinels = 0; sentinels < 2;) {
    auto o = c->next();
    ASSERT_TRUE(o.has_value()) << "a sentinel never came";
    if (op_of(*o) == "state") states.push_back(*o);
    if (op_of(*o) == "msg") ++sentinels;
  }
  ASSERT_EQ(states.size(), 2u);
  std::vector<std::string> from = {json_str(states[0], "from").value_or(""),
                                   json_str(states[1], "from").value_or("")};
  std::sort(from.begin(), from.end());
  EXPECT_EQ(from, (std::vector<std::string>{"alice", "bob"}));
}

// ---- presence ----

TEST_F(DeliveryTest, PresenceAnnouncesAJoiningUserToTheOthers) {
  auto a = connect_as("alice");
  a->join("world:p-join");
  auto b = connect_as("bob");
  b->join("world:p-join");
  EXPECT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-join","join":["bob"]})");
}

TEST_F(DeliveryTest, PresenceIsNotSentToTheUserWhoJoined) {
  auto a = connect_as("alice");
  a->join("world:p-self");
  auto b = connect_as("bob");
  b->join("world:p-self");
  auto c = connect_as("carol");
  c->join("world:p-self");
  // Bob's next presence is about carol, not about himself.
  EXPECT_EQ(b->expect("presence"), R"({"op":"presence","ch":"world:p-self","join":["carol"]})");
}

TEST_F(DeliveryTest, ASecondConnectionOfTheSameUserIsNotAnnouncedAgain) {
  auto a = connect_as("alice");
  a->join("world:p-second");
  auto b1 = connect_as("bob");
  b1->join("world:p-second");
  ASSERT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-second","join":["bob"]})");
  auto b2 = connect_as("bob");
  b2->join("world:p-second");
  auto c = connect_as("carol");
  c->join("world:p-second");
  EXPECT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-second","join":["carol"]})");
}

TEST_F(DeliveryTest, LeaveIsAnnouncedOnlyWhenTheUsersLastConnectionLeaves) {
  auto a = connect_as("alice");
  a->join("world:p-leave");
  auto b1 = connect_as("bob");
  auto b2 = connect_as("bob");
  b1->join("world:p-leave");
  b2->join("world:p-leave");
  ASSERT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-leave","join":["bob"]})");
  b1->send(R"({"op":"leave","ch":"world:p-leave"})");
  ASSERT_FALSE(b1->expect("left").empty());
  auto c = connect_as("carol");
  c->join("world:p-leave");
  ASSERT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-leave","join":["carol"]})")
      << "bob still has a connection in the channel";
  b2->send(R"({"op":"leave","ch":"world:p-leave"})");
  EXPECT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-leave","leave":["bob"]})");
}

TEST_F(DeliveryTest, DisconnectingTheLastConnectionAnnouncesLeaveAtOnce) {
  auto a = connect_as("alice");
  a->join("world:p-gone");
  auto b = connect_as("bob");
  b->join("world:p-gone");
  ASSERT_FALSE(a->expect("presence").empty());
  const auto t0 = std::chrono::steady_clock::now();
  b->close();
  EXPECT_EQ(a->expect("presence"), R"({"op":"presence","ch":"world:p-gone","leave":["bob"]})");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "no grace period";
}

TEST_F(DeliveryTest, PresenceIsNotSentWhereTheNamespaceHasNoPresence) {
  auto a = connect_as("alice");
  a->join("tick:no-presence");
  auto b = connect_as("bob");
  b->join("tick:no-presence");
  b->close();
  auto c = connect_as("carol");
  c->join("tick:no-presence");
  pub(*c, "tick:no-presence", "sentinel");
  EXPECT_TRUE(with_op(until_msg(*a, "sentinel"), "presence").empty());
}

// ---- ticks ----

// tick_ms is an upper bound, not a delay: a msg of a quiet channel goes out at
// the end of the server's loop iteration that committed it.
TEST_F(DeliveryTest, ALoneMessageArrivesLongBeforeTheTick) {
  auto pubr = connect_as("alice");
  auto sub = connect_as("bob");
  pubr->join("lazy:lone");
  sub->join("lazy:lone");
  // A tick of 10 s: waiting for it would take 5 s on average.
  const auto t0 = std::chrono::steady_clock::now();
  pub(*pubr, "lazy:lone", "quick");
  const auto m = sub->expect("msg", 5s);
  EXPECT_EQ(json_str(m, "id"), "quick") << m;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms) << "the msg waited for the tick";
}

// Batching only under load: a channel that sent within the last tick_ms
// waits for its next tick, so a busy channel gets one frame per tick.
TEST_F(DeliveryTest, MessagesOfABusyChannelWaitForTheTickInOneFrame) {
  auto pubr = connect_as("alice");
  auto sub = connect_as("bob");
  pubr->join("tick:busy");
  sub->join("tick:busy");
  pub(*pubr, "tick:busy", "first");
  ASSERT_TRUE(until_msg(*sub, "first").empty());  // quiet until now: at once
  const size_t before = sub->frames();
  for (int i = 1; i <= 3; ++i) pub(*pubr, "tick:busy", "b" + std::to_string(i));
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(json_str(sub->expect("msg"), "id"), "b" + std::to_string(i));
  EXPECT_EQ(sub->frames() - before, 1u);
}

// `state` keeps the tick as its coalescing window, and what a channel has
// pending waits with it (its events stay in order): a busy channel still gets
// one frame per tick.
TEST_F(DeliveryTest, MessagesBehindAStateWaitForTheTickInOneFrame) {
  auto pubr = connect_as("alice");
  auto sub = connect_as("bob");
  pubr->join("tick:batch");
  sub->join("tick:batch");
  // Align with a tick of 100 ms, as in the coalescing test.
  state(*pubr, "tick:batch", "sync", "0");
  ASSERT_FALSE(sub->expect("state").empty());
  const size_t before = sub->frames();
  state(*pubr, "tick:batch", "pos", "1");
  for (int i = 1; i <= 5; ++i) pub(*pubr, "tick:batch", "b" + std::to_string(i));
  EXPECT_EQ(json_str(sub->expect("state"), "key"), "pos");
  int64_t expect_seq = 1;
  for (int i = 1; i <= 5; ++i) {
    auto m = sub->expect("msg");
    EXPECT_EQ(json_str(m, "id"), "b" + std::to_string(i)) << m;
    EXPECT_EQ(json_int(m, "seq"), expect_seq++);
  }
  EXPECT_EQ(sub->frames() - before, 1u);
}

TEST_F(DeliveryTest, ZeroTickSendsEachMessageAtOnce) {
  auto pubr = connect_as("alice");
  auto sub = connect_as("bob");
  pubr->join("now:batch");
  sub->join("now:batch");
  const size_t before = sub->frames();
  for (int i = 1; i <= 5; ++i) pub(*pubr, "now:batch", "n" + std::to_string(i));
  for (int i = 1; i <= 5; ++i) {
    auto m = sub->expect("msg");
    EXPECT_EQ(json_str(m, "id"), "n" + std::to_string(i)) << m;
  }
  EXPECT_EQ(sub->frames() - before, 5u) << "one frame per message";
}

TEST_F(DeliveryTest, EventsOfSeveralChannelsWithinOneTickShareOneFrame) {
  auto pubr = connect_as("alice");
  auto sub = connect_as("bob");
  for (const char* ch : {"tick:multi-a", "tick:multi-b"}) {
    pubr->join(ch);
    sub->join(ch);
  }
  state(*pubr, "tick:multi-a", "sync", "0");
  ASSERT_FALSE(sub->expect("state").empty());
  const size_t before = sub->frames();
  // Each channel holds a state for the tick; their msgs wait with it.
  state(*pubr, "tick:multi-a", "pos", "1");
  state(*pubr, "tick:multi-b", "pos", "2");
  pub(*pubr, "tick:multi-a", "a1");
  pub(*pubr, "tick:multi-b", "b1");
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(sub->expect("msg").empty());
  EXPECT_EQ(sub->frames() - before, 1u);
}

TEST_F(DeliveryTest, AcksAreNotHeldForATick) {
  auto a = connect_as("alice");
  a->join("slow:ack");
  pub(*a, "slow:ack", "sync");
  ASSERT_TRUE(until_msg(*a, "sync").size() <= 1);  // its ack may come first
  // Right after a tick: the next one is ~200 ms away, the ack is not.
  a->send(R"({"op":"pub","ch":"slow:ack","id":"fast","body":1,"rid":"fast"})");
  auto first = a->next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(op_of(*first), "ack") << *first;
  EXPECT_EQ(json_str(*first, "rid"), "fast") << *first;
}

}  // namespace
}  // namespace parley::testing
