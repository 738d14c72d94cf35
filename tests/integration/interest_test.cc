// Interest areas over real sockets (PROTOCOL.md "Interest areas"): in a
// namespace with aoi_cell, a member receives the positioned states of avatars
// in its own and the neighbouring cells only; moving across a cell boundary
// changes that without a re-join; msgs, presence and states without pos reach
// everyone; bad positions are bad_request.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

class InterestTest : public SharedServerTest<InterestTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml(
        "publish_per_conn_sec = 0\n"
        "[tenants.demo.namespaces.grid]\ndurable = false\ntick_ms = 20\npresence = true\n"
        "aoi_cell = 10\n"
        "[tenants.demo.namespaces.flat]\ndurable = false\ntick_ms = 20\npresence = false\n"));
  }

 protected:
  // A state; `pos` is raw JSON ("" for none).
  static void state(Client& c, const std::string& ch, const std::string& pos,
                    const std::string& body, const std::string& key = "pos") {
    std::string f = R"({"op":"state","ch":")" + ch + R"(","key":")" + key + R"(")";
    if (!pos.empty()) f += R"(,"pos":)" + pos;
    c.send(f + R"(,"body":)" + body + "}");
  }

  // The bodies of the states among `objs` (raw JSON).
  static std::vector<std::string> state_bodies(const std::vector<std::string>& objs) {
    std::vector<std::string> out;
    for (const auto& o : objs) {
      if (op_of(o) == "state") out.push_back(json_raw(o, "body").value_or("?"));
    }
    return out;
  }

  // Puts `c` at `pos` and waits until its own loop knows: the state went to
  // the hub before the pub, so the pub's msg coming back means it was applied.
  static void place(Client& c, const std::string& ch, const std::string& pos, const std::string& tag) {
    state(c, ch, pos, "\"" + tag + "\"");
    c.send(pub_frame(ch, tag, "0"));
    until_msg(c, tag);
  }

  // What each receiver got of states up to `sender`'s sentinel pub `id`.
  static std::vector<std::string> states_until(Client& c, const std::string& id) {
    return state_bodies(until_msg(c, id));
  }
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(InterestTest, AMemberSeesItsNeighboursStateAndNotAFarAvatars) {
  const std::string ch = "grid:near-far";
  auto a = connect_as("alice");
  auto b = connect_as("bob");    // neighbour cell
  auto c = connect_as("carol");  // far away
  auto d = connect_as("dave");   // never sends a position: receives everything
  for (auto* x : {a.get(), b.get(), c.get(), d.get()}) x->join(ch);
  place(*a, ch, "[5,5]", "a0");
  place(*b, ch, "[15,5]", "b0");
  place(*c, ch, "[55.5,-30]", "c0");

  state(*a, ch, "[6,6]", R"("a1")");
  a->send(pub_frame(ch, "s1", "0"));
  const auto at_b = states_until(*b, "s1");
  const auto at_c = states_until(*c, "s1");
  const auto at_d = states_until(*d, "s1");
  EXPECT_TRUE(contains(at_b, R"("a1")"));
  EXPECT_FALSE(contains(at_c, R"("a1")"));
  EXPECT_TRUE(contains(at_d, R"("a1")"));

  // The far avatar's state: not to a or b, still to d.
  state(*c, ch, "[56,-31]", R"("c1")");
  c->send(pub_frame(ch, "s2", "0"));
  EXPECT_FALSE(contains(states_until(*a, "s2"), R"("c1")"));
  EXPECT_FALSE(contains(states_until(*b, "s2"), R"("c1")"));
  EXPECT_TRUE(contains(states_until(*d, "s2"), R"("c1")"));
}

TEST_F(InterestTest, ADeliveredStateCarriesItsPosition) {
  const std::string ch = "grid:echo-pos";
  auto a = connect_as("alice");
  auto b = connect_as("bob");
  a->join(ch);
  b->join(ch);
  state(*a, ch, "[1.5, -2, 3e2]", "{}");
  EXPECT_EQ(without_server_time(b->expect("state")),
            R"({"op":"state","ch":"grid:echo-pos","from":"alice","key":"pos","pos":[1.5,-2,300],"body":{}})");
}

TEST_F(InterestTest, MovingAcrossACellBoundaryChangesWhatArrivesWithoutARejoin) {
  const std::string ch = "grid:move";
  auto a = connect_as("alice");
  auto c = connect_as("carol");
  a->join(ch);
  c->join(ch);
  place(*a, ch, "[5,5]", "a0");
  place(*c, ch, "[95,95]", "c0");

  state(*a, ch, "[5,5]", R"("far")");
  a->send(pub_frame(ch, "s1", "0"));
  EXPECT_FALSE(contains(states_until(*c, "s1"), R"("far")"));

  // Carol walks into the next cell (x 19.9 is cell 1, alice is in cell 0).
  place(*c, ch, "[19.9,9]", "c1");
  EXPECT_TRUE(contains(states_until(*a, "c1"), R"("c1")"));  // her move reached alice
  state(*a, ch, "[5,5]", R"("near")");
  a->send(pub_frame(ch, "s2", "0"));
  EXPECT_TRUE(contains(states_until(*c, "s2"), R"("near")"));

  // One step further (x 20 is cell 2): out of range again.
  place(*c, ch, "[20,9]", "c2");
  state(*a, ch, "[5,5]", R"("gone")");
  a->send(pub_frame(ch, "s3", "0"));
  EXPECT_FALSE(contains(states_until(*c, "s3"), R"("gone")"));
}

TEST_F(InterestTest, NonPositionalTrafficStillReachesEveryone) {
  const std::string ch = "grid:all";
  auto a = connect_as("alice");
  auto c = connect_as("carol");
  a->join(ch);
  c->join(ch);
  place(*a, ch, "[5,5]", "a0");
  place(*c, ch, "[500,500]", "c0");
  // A state without pos, a msg, a presence, a server broadcast: all reach carol.
  state(*a, ch, "", R"("hp")", "hp");
  a->send(pub_frame(ch, "chat", R"("hi")"));
  EXPECT_TRUE(contains(states_until(*c, "chat"), R"("hp")"));
  auto e = connect_as("erin");
  e->join(ch);
  EXPECT_EQ(c->expect("presence"), R"({"op":"presence","ch":"grid:all","join":["erin"]})");
  const auto r = http_request(server_->http_port(), "POST", "/v1/publish",
                              R"({"ch":"grid:all","id":"srv","body":"tick"})", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  until_msg(*c, "srv");
}

TEST_F(InterestTest, WithoutAGridAPositionIsCarriedButFiltersNothing) {
  const std::string ch = "flat:world";
  auto a = connect_as("alice");
  auto c = connect_as("carol");
  a->join(ch);
  c->join(ch);
  place(*a, ch, "[5,5]", "a0");
  place(*c, ch, "[5000,5000]", "c0");
  state(*a, ch, "[5,5]", R"("a1")");
  a->send(pub_frame(ch, "s1", "0"));
  EXPECT_TRUE(contains(states_until(*c, "s1"), R"("a1")"));
}

TEST_F(InterestTest, BadPositionsAreBadRequestAndTheConnectionStaysOpen) {
  const std::string ch = "grid:bad";
  auto a = connect_as("alice");
  a->join(ch);
  const std::vector<std::string> bad = {
      R"("5,5")", "[1]", "[]", "[1,2,3,4]", R"(["1",2])", "[1,null]", R"({"x":1,"y":2})",
      "[2e15,0]", "[0,-1e16]", "[[1],2]", "true"};
  int rid = 10;
  for (const auto& pos : bad) {
    a->send(R"({"op":"state","rid":)" + std::to_string(rid) + R"(,"ch":")" + ch +
            R"(","key":"pos","pos":)" + pos + R"(,"body":1})");
    auto e = a->next();
    ASSERT_TRUE(e.has_value()) << pos;
    EXPECT_EQ(op_of(*e), "error") << pos << " -> " << *e;
    EXPECT_EQ(json_str(*e, "code"), "bad_request") << pos << " -> " << *e;
    EXPECT_EQ(json_int(*e, "rid"), rid) << pos << " -> " << *e;
    ++rid;
  }
  // Numbers simdjson cannot hold (1e400) make the frame "not JSON": bad_request too.
  a->send(R"({"op":"state","ch":")" + ch + R"(","key":"pos","pos":[1e400,0],"body":1})");
  auto e = a->next();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(json_str(*e, "code"), "bad_request") << *e;
  a->send(R"({"op":"ping","rid":99})");
  EXPECT_EQ(json_int(a->expect("pong"), "rid"), 99);
}

}  // namespace
}  // namespace parley::testing
