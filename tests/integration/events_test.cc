// Event streams over real sockets (PROTOCOL.md "Event streams and
// leaderboards", issue 12): what a game server and a player see.
#include <gtest/gtest.h>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr const char* kEventTenants = R"(
[tenants.demo.topics.hunt]
partitions = 4

[tenants.demo.leaderboards.hunt]
topic = "hunt"
type = "score"
member = "player"
score = "points"
)";

class EventsTest : public SharedServerTest<EventsTest> {
 public:
  static ServerSpec server_spec() {
    ServerSpec spec;
    spec.tenants_toml = default_tenants_toml() + kEventTenants;
    spec.unix_socket = true;
    return spec;
  }

 protected:
  // A player over WebSocket, and the connection stays usable after each error.
  static void expect_error(Client& c, const std::string& frame, const std::string& code,
                           int rid) {
    SCOPED_TRACE(frame);
    c.send(frame);
    auto e = c.expect("error");
    EXPECT_EQ(json_str(e, "code"), code) << e;
    EXPECT_EQ(json_int(e, "rid"), rid) << e;
    c.send(R"({"op":"ping","rid":"after"})");
    EXPECT_EQ(json_str(c.expect("pong"), "rid"), "after");
  }
};

TEST_F(EventsTest, UnknownTopicOrBoardIsNotFoundAndTheConnectionStays) {
  auto c = connect_as("p1");
  expect_error(*c, R"({"op":"emit","rid":1,"topic":"nope","events":[{"key":"k","type":"t","body":1}]})",
               "not_found", 1);
  expect_error(*c, R"({"op":"tail","rid":2,"topic":"nope"})", "not_found", 2);
  expect_error(*c, R"({"op":"consume","rid":3,"topic":"nope","group":"g"})", "not_found", 3);
  expect_error(*c, R"({"op":"commit","rid":4,"topic":"nope","group":"g","gen":1,"p":0,"off":0})",
               "not_found", 4);
  expect_error(*c, R"({"op":"rank","rid":5,"board":"nope","member":"m"})", "not_found", 5);
}

TEST_F(EventsTest, MalformedEventOpsAreBadRequests) {
  auto c = connect_as("p1");
  expect_error(*c, R"({"op":"emit","rid":1,"topic":"hunt","events":[]})", "bad_request", 1);
  expect_error(*c, R"({"op":"emit","rid":2,"topic":"hunt","events":[{"key":"k","body":1}]})",
               "bad_request", 2);
  expect_error(*c, R"({"op":"tail","rid":3,"topic":"hunt","from":"soon"})", "bad_request", 3);
  expect_error(*c, R"({"op":"commit","rid":4,"topic":"hunt","group":"g","p":0,"off":1})",
               "bad_request", 4);
}

TEST_F(EventsTest, LeaveOfATopicAnswersLeft) {
  auto c = connect_as("p1");
  c->send(R"({"op":"leave","rid":8,"topic":"hunt","group":"g"})");
  auto left = c->expect("left");
  EXPECT_EQ(json_str(left, "topic"), "hunt") << left;
  EXPECT_EQ(json_str(left, "group"), "g") << left;
  EXPECT_EQ(json_int(left, "rid"), 8) << left;
}

TEST_F(EventsTest, GameServerSaysHelloWithItsApiKeyOverTheUnixSocket) {
  auto c = Client::connect(0, Wire::kUnix, "", server_->unix_path());
  c->send(R"({"op":"hello","v":1,"api_key":"key-demo","rid":1})");
  auto w = c->expect("welcome");
  EXPECT_EQ(json_str(w, "user"), "server") << w;
  EXPECT_EQ(json_str(w, "tenant"), "demo") << w;
}

}  // namespace
}  // namespace parley::testing
