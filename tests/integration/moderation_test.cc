// Moderation as events of the log (PROTOCOL.md "Moderation: delete and edit"):
// an edit or delete of a message takes a seq of its own, live members get the
// `edit` / `delete` frame, history answers each message's current version (or a
// tombstone) and a resume with `since` replays the events, across a restart
// too; who may change a message, and the codes of bad input. Every test runs
// on the embedded store and on the valkey store (a real redis-server).
#include <gtest/gtest.h>

#include <thread>

#include "auth/jwt.h"
#include "common/clock.h"
#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

// `chat`: the default window; `strict`: authors may never change a message;
// `short`: a one-second window.
constexpr const char* kTenantExtra =
    "publish_per_sec = 0\npublish_per_conn_sec = 0\nmax_message_bytes = 1024\n"
    "\n[tenants.demo.namespaces.strict]\nedit_window_s = 0\n"
    "\n[tenants.demo.namespaces.short]\nedit_window_s = 1\n";

std::string edit_frame(const std::string& ch, int64_t target, const std::string& body, int rid) {
  return R"({"op":"edit","rid":)" + std::to_string(rid) + R"(,"ch":")" + ch +
         R"(","target":)" + std::to_string(target) + R"(,"body":)" + body + "}";
}
std::string delete_frame(const std::string& ch, int64_t target, int rid) {
  return R"({"op":"delete","rid":)" + std::to_string(rid) + R"(,"ch":")" + ch +
         R"(","target":)" + std::to_string(target) + "}";
}

// The next reply or error with this rid (live frames before it are skipped).
std::string reply_to(Client& c, int rid) {
  for (;;) {
    auto o = c.next(5s);
    if (!o) return "";
    if (json_int(*o, "rid") == rid) return *o;
  }
}

// The next frame of channel `ch` that is a msg, edit or delete.
std::string next_entry(Client& c, const std::string& ch) {
  for (;;) {
    auto o = c.next(5s);
    if (!o) return "";
    const std::string op = op_of(*o);
    if ((op == "msg" || op == "edit" || op == "delete") && json_str(*o, "ch") == ch) return *o;
  }
}

std::string mod_token(const std::string& user) {
  auth::Claims c;
  c.sub = user;
  c.tenant = "demo";
  c.exp = wall_ms() / 1000 + 3600;
  c.mod = true;
  return auth::mint_hs256(c, kDemoSecret);
}

class ModerationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ServerSpec spec = spec_with_tenants(default_tenants_toml(kTenantExtra));
    if (GetParam() == "valkey") {
      RedisServer& redis = shared_redis();
      ASSERT_TRUE(redis.ok()) << redis.why();
      ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
      spec.store = "valkey";
      spec.tenants_toml += "\n" + valkey_toml({redis.address()});
    }
    server_ = std::make_unique<ServerProcess>(spec);
    server_->start();
  }

  std::unique_ptr<Client> user(const std::string& name) {
    return connect_as(server_->http_port(), name);
  }
  // Publishes and returns the ack's seq.
  int64_t pub(Client& c, const std::string& ch, const std::string& id, const std::string& body) {
    const int rid = ++rid_;
    c.send(pub_frame(ch, id, body, rid));
    const std::string ack = reply_to(c, rid);
    EXPECT_EQ(op_of(ack), "ack") << ack;
    return json_int(ack, "seq").value_or(-1);
  }
  std::string ask(Client& c, const std::string& frame, int rid) {
    c.send(frame);
    return reply_to(c, rid);
  }
  std::string history(Client& c, const std::string& ch) {
    const int rid = ++rid_;
    c.send(R"({"op":"history","rid":)" + std::to_string(rid) + R"(,"ch":")" + ch + R"(","after":0})");
    return reply_to(c, rid);
  }

  std::unique_ptr<ServerProcess> server_;
  int rid_ = 100;
};

// What a channel holds after: m1 by alice (edited by her), m2 by alice (deleted by her).
void expect_current_versions(const std::vector<std::string>& msgs, const std::string& ch) {
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(op_of(msgs[0]), "msg") << msgs[0];
  EXPECT_EQ(json_int(msgs[0], "seq"), 1);
  EXPECT_EQ(json_str(msgs[0], "from"), "alice");
  EXPECT_EQ(json_str(msgs[0], "id"), "m1");
  EXPECT_EQ(json_raw(msgs[0], "body"), R"({"t":"fixed"})") << msgs[0];
  EXPECT_GT(json_int(msgs[0], "edited").value_or(0), 0) << msgs[0];
  EXPECT_EQ(op_of(msgs[1]), "msg") << msgs[1];
  EXPECT_EQ(json_int(msgs[1], "seq"), 2);
  EXPECT_EQ(json_bool(msgs[1], "deleted"), true) << msgs[1];
  EXPECT_FALSE(json_raw(msgs[1], "body").has_value()) << msgs[1];
  EXPECT_EQ(op_of(msgs[2]), "edit") << msgs[2];
  EXPECT_EQ(json_int(msgs[2], "seq"), 3);
  EXPECT_EQ(json_int(msgs[2], "target"), 1);
  EXPECT_EQ(json_raw(msgs[2], "body"), R"({"t":"fixed"})");
  EXPECT_EQ(op_of(msgs[3]), "delete") << msgs[3];
  EXPECT_EQ(json_int(msgs[3], "seq"), 4);
  EXPECT_EQ(json_int(msgs[3], "target"), 2);
  for (const auto& m : msgs) EXPECT_EQ(json_str(m, "ch"), ch) << m;
}

TEST_P(ModerationTest, EditAndDeleteAreSeenLiveInHistoryAndAfterAResumeAcrossARestart) {
  const std::string ch = "chat:mod";
  auto alice = user("alice");
  auto bob = user("bob");
  EXPECT_EQ(op_of(alice->join(ch)), "joined");
  EXPECT_EQ(op_of(bob->join(ch)), "joined");
  ASSERT_EQ(pub(*alice, ch, "m1", R"({"t":"tpyo"})"), 1);
  ASSERT_EQ(pub(*alice, ch, "m2", R"({"t":"oops"})"), 2);
  EXPECT_EQ(json_int(next_entry(*bob, ch), "seq"), 1);
  EXPECT_EQ(json_int(next_entry(*bob, ch), "seq"), 2);

  const std::string edited = ask(*alice, edit_frame(ch, 1, R"({"t":"fixed"})", 7), 7);
  EXPECT_EQ(edited, R"({"op":"edited","rid":7,"ch":"chat:mod","target":1,"seq":3})");
  const std::string deleted = ask(*alice, delete_frame(ch, 2, 8), 8);
  EXPECT_EQ(deleted, R"({"op":"deleted","rid":8,"ch":"chat:mod","target":2,"seq":4})");

  // Live, in seq order, as their own entries.
  const std::string live_edit = next_entry(*bob, ch);
  EXPECT_EQ(without_server_time(live_edit),
            R"({"op":"edit","ch":"chat:mod","seq":3,"target":1,"from":"alice","body":{"t":"fixed"}})");
  const std::string live_delete = next_entry(*bob, ch);
  EXPECT_EQ(without_server_time(live_delete),
            R"({"op":"delete","ch":"chat:mod","seq":4,"target":2,"from":"alice"})");

  // History: current versions, then the events; over the socket and over HTTP.
  expect_current_versions(json_array_items(json_raw(history(*bob, ch), "msgs").value_or("")), ch);
  expect_current_versions(http_history_all(server_->http_port(), ch), ch);

  // A resume across a restart replays the events after `since`.
  alice.reset();
  bob.reset();
  server_->kill9();
  server_->restart();
  auto carol = user("carol");
  carol->send(join_frame(ch, 2, 1));
  EXPECT_EQ(op_of(carol->expect("joined")), "joined");
  const std::string e = next_entry(*carol, ch);
  EXPECT_EQ(op_of(e), "edit") << e;
  EXPECT_EQ(json_int(e, "target"), 1);
  EXPECT_EQ(json_raw(e, "body"), R"({"t":"fixed"})");
  const std::string d = next_entry(*carol, ch);
  EXPECT_EQ(op_of(d), "delete") << d;
  EXPECT_EQ(json_int(d, "target"), 2);
  // From the start: the messages in their current version, then the events.
  auto dave = user("dave");
  dave->send(join_frame(ch, 0, 1));
  EXPECT_EQ(op_of(dave->expect("joined")), "joined");
  std::vector<std::string> replay;
  for (int i = 0; i < 4; ++i) replay.push_back(next_entry(*dave, ch));
  expect_current_versions(replay, ch);
  expect_current_versions(http_history_all(server_->http_port(), ch), ch);
  // The log goes on gap-free after them.
  EXPECT_EQ(op_of(carol->join(ch)), "joined");
  EXPECT_EQ(pub(*carol, ch, "m5", "5"), 5);
}

TEST_P(ModerationTest, OthersAndAuthorsOutsideTheWindowAreRefusedModeratorsAndTheApiAreNot) {
  auto alice = user("alice");
  auto bob = user("bob");
  EXPECT_EQ(op_of(alice->join("chat:a")), "joined");
  ASSERT_EQ(pub(*alice, "chat:a", "m1", "1"), 1);
  // Not the author.
  std::string r = ask(*bob, edit_frame("chat:a", 1, "2", 3), 3);
  EXPECT_EQ(json_str(r, "code"), "forbidden") << r;
  r = ask(*bob, delete_frame("chat:a", 1, 4), 4);
  EXPECT_EQ(json_str(r, "code"), "forbidden") << r;
  // The author, where the window is 0 (never) and after a window passed.
  EXPECT_EQ(op_of(alice->join("strict:a")), "joined");
  ASSERT_EQ(pub(*alice, "strict:a", "m1", "1"), 1);
  r = ask(*alice, edit_frame("strict:a", 1, "2", 5), 5);
  EXPECT_EQ(json_str(r, "code"), "forbidden") << r;
  EXPECT_EQ(op_of(alice->join("short:a")), "joined");
  ASSERT_EQ(pub(*alice, "short:a", "m1", "1"), 1);
  ASSERT_EQ(pub(*alice, "short:a", "m2", "2"), 2);
  r = ask(*alice, edit_frame("short:a", 1, "10", 6), 6);
  EXPECT_EQ(op_of(r), "edited") << r;  // within its second
  std::this_thread::sleep_for(1100ms);  // the window is time itself: nothing to await
  r = ask(*alice, edit_frame("short:a", 2, "20", 7), 7);
  EXPECT_EQ(json_str(r, "code"), "forbidden") << r;
  // A moderator (token claim mod) and the game server (HTTP API) always may.
  auto mod = connect_with_token(server_->http_port(), mod_token("mia"));
  r = ask(*mod, edit_frame("strict:a", 1, R"({"by":"mod"})", 8), 8);
  EXPECT_EQ(op_of(r), "edited") << r;
  EXPECT_EQ(json_int(r, "seq"), 2);
  // The game server over TCP (hello with the api_key), as "server".
  auto game = Client::connect(server_->tcp_port(), Wire::kTcp);
  game->send(R"({"op":"hello","v":1,"api_key":"key-demo","rid":1})");
  EXPECT_EQ(json_str(game->expect("welcome"), "user"), "server");
  r = ask(*game, edit_frame("short:a", 1, R"({"by":"game"})", 9), 9);
  EXPECT_EQ(op_of(r), "edited") << r;
  EXPECT_EQ(json_int(r, "seq"), 4);
  auto http = http_request(server_->http_port(), "POST", "/v1/delete",
                           R"({"ch":"short:a","target":2})", kDemoApiKey);
  EXPECT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(http.body, R"({"seq":5,"target":2})");
  http = http_request(server_->http_port(), "POST", "/v1/edit",
                      R"({"ch":"chat:a","target":1,"body":{"by":"server"}})", kDemoApiKey);
  EXPECT_EQ(http.status, 200) << http.body;
  const auto msgs = http_history_all(server_->http_port(), "chat:a");
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(json_raw(msgs[0], "body"), R"({"by":"server"})") << msgs[0];
  EXPECT_EQ(json_str(msgs[1], "from"), "server") << msgs[1];
  // The refused ones took no seq.
  const auto strict = http_history_all(server_->http_port(), "strict:a");
  ASSERT_EQ(strict.size(), 2u);
  EXPECT_EQ(json_str(strict[1], "from"), "mia");
}

TEST_P(ModerationTest, BadInputIsAnsweredWithCodes) {
  auto alice = user("alice");
  EXPECT_EQ(op_of(alice->join("chat:b")), "joined");
  ASSERT_EQ(pub(*alice, "chat:b", "m1", "1"), 1);
  ASSERT_EQ(pub(*alice, "chat:b", "m2", "2"), 2);
  auto code = [&](const std::string& frame, int rid) {
    return json_str(ask(*alice, frame, rid), "code").value_or("(no code)");
  };
  EXPECT_EQ(code(edit_frame("chat:b", 99, "1", 1), 1), "not_found");       // unknown seq
  EXPECT_EQ(code(delete_frame("chat:other", 1, 2), 2), "not_found");       // wrong channel
  EXPECT_EQ(code(edit_frame("chat:b", 0, "1", 3), 3), "bad_request");      // not a seq
  EXPECT_EQ(code(R"({"op":"delete","rid":4,"ch":"chat:b"})", 4), "bad_request");
  EXPECT_EQ(code(R"({"op":"edit","rid":5,"ch":"chat:b","target":1})", 5), "bad_request");
  EXPECT_EQ(code(edit_frame("chat:b", -3, "1", 6), 6), "bad_request");
  EXPECT_EQ(code(edit_frame("bad name", 1, "1", 7), 7), "bad_request");
  const std::string big = "\"" + std::string(1100, 'x') + "\"";
  EXPECT_EQ(code(edit_frame("chat:b", 1, big, 8), 8), "too_large");        // oversized body
  // An event's seq is no message; a deleted message is gone.
  ASSERT_EQ(op_of(ask(*alice, delete_frame("chat:b", 2, 9), 9)), "deleted");
  EXPECT_EQ(code(edit_frame("chat:b", 3, "1", 10), 10), "not_found");
  EXPECT_EQ(code(edit_frame("chat:b", 2, "1", 11), 11), "not_found");
  EXPECT_EQ(code(delete_frame("chat:b", 2, 12), 12), "not_found");
  // A channel the token does not allow.
  auto limited = connect_with_token(server_->http_port(), ServerProcess::token("alice", "demo", {"chat:x"}));
  EXPECT_EQ(json_str(ask(*limited, delete_frame("chat:b", 1, 13), 13), "code"), "forbidden");
  // Over HTTP.
  const uint16_t port = server_->http_port();
  auto h = http_request(port, "POST", "/v1/edit", R"({"ch":"chat:b","target":77,"body":1})", kDemoApiKey);
  EXPECT_EQ(h.status, 404) << h.body;
  EXPECT_EQ(json_str(h.body, "code"), "not_found");
  h = http_request(port, "POST", "/v1/edit", R"({"ch":"chat:b","target":1,"body":)" + big + "}", kDemoApiKey);
  EXPECT_EQ(h.status, 413) << h.body;
  h = http_request(port, "POST", "/v1/edit", R"({"ch":"chat:b","target":1})", kDemoApiKey);
  EXPECT_EQ(h.status, 400) << h.body;
  h = http_request(port, "POST", "/v1/delete", R"({"ch":"chat:b","target":"1"})", kDemoApiKey);
  EXPECT_EQ(h.status, 400) << h.body;
  h = http_request(port, "POST", "/v1/delete", R"({"ch":"chat:b","target":1})", "wrong-key");
  EXPECT_EQ(h.status, 401) << h.body;
  // Nothing refused took a seq: the next pub is 4 (m1, m2, the delete).
  EXPECT_EQ(pub(*alice, "chat:b", "m4", "4"), 4);
}

// Two nodes on one valkey store: an edit or delete made on one reaches the
// other node's members live (the partition feed carries the entry's kind and
// target), and both nodes answer the message's current version.
TEST(ModerationNodes, EntriesReachTheOtherNodesMembersLive) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerSpec spec = spec_with_tenants(default_tenants_toml(kTenantExtra));
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_toml({redis.address()});
  ServerProcess a(spec), b(spec);
  a.start();
  b.start();
  const std::string ch = "chat:nodes";
  auto alice = connect_as(a.http_port(), "alice");
  auto bob = connect_as(b.http_port(), "bob");
  EXPECT_EQ(op_of(alice->join(ch)), "joined");
  EXPECT_EQ(op_of(bob->join(ch)), "joined");
  alice->send(pub_frame(ch, "m1", "1", 1));
  EXPECT_EQ(json_int(reply_to(*alice, 1), "seq"), 1);
  EXPECT_EQ(json_int(next_entry(*bob, ch), "seq"), 1);
  alice->send(edit_frame(ch, 1, R"({"v":2})", 2));
  EXPECT_EQ(op_of(reply_to(*alice, 2)), "edited");
  EXPECT_EQ(without_server_time(next_entry(*bob, ch)),
            R"({"op":"edit","ch":"chat:nodes","seq":2,"target":1,"from":"alice","body":{"v":2}})");
  auto h = http_request(b.http_port(), "POST", "/v1/delete", R"({"ch":"chat:nodes","target":1})", kDemoApiKey);
  EXPECT_EQ(h.body, R"({"seq":3,"target":1})");
  std::string on_a;  // alice had m1 and her own edit before it
  do on_a = next_entry(*alice, ch);
  while (!on_a.empty() && json_int(on_a, "seq") < 3);
  EXPECT_EQ(without_server_time(on_a),
            R"({"op":"delete","ch":"chat:nodes","seq":3,"target":1,"from":"server"})");
  const auto msgs = http_history_all(a.http_port(), ch);
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(json_bool(msgs[0], "deleted"), true) << msgs[0];
  alice->send(edit_frame(ch, 1, "3", 4));
  EXPECT_EQ(json_str(reply_to(*alice, 4), "code"), "not_found");
}

INSTANTIATE_TEST_SUITE_P(Stores, ModerationTest, ::testing::Values("embedded", "valkey"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace parley::testing
