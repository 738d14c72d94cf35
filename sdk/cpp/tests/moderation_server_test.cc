// Edits, deletes and kicks through the SDK against the real server (PROTOCOL.md
// "Moderation"), in JSON and in MessagePack (the WebSocket subprotocol): the
// author's edit and delete answered with their own seqs, the entries reaching
// another member live in seq order with the msgs, history answering current
// versions (an `edited` msg, a tombstone) and the entries, a stranger's edit
// refused with `forbidden`, a delete of no message with `not_found` and no seq
// taken, a resume with `since` replaying the entries, and a kick over the HTTP
// API ending the member's channel with its reason. The server binary comes
// from PARLEY_SERVER_BIN (ctest sets it); without one the tests skip.
#include <gtest/gtest.h>
#include <parley/client.h>
#include <parley/default_transport.h>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

// One server for the suite: a fresh folder, the embedded store, ports from the ready line.
class Server {
 public:
  static constexpr const char* kApiKey = "sdk-cpp-mod-key";
  static Server& get() {
    static Server s;
    return s;
  }
  bool ok() const { return proc_.ok(); }
  const std::string& why() const { return proc_.why(); }
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(proc_.port()) + "/v1/ws"; }
  std::string token(const std::string& user) const { return proc_.token(user); }
  /// POSTs `body` to the HTTP API as the game server; the answer's body.
  std::string post(const std::string& path, const std::string& body) const {
    std::ofstream(proc_.dir() + "/req.json") << body;
    return run("curl -s -X POST -H 'Authorization: Bearer " + std::string(kApiKey) +
               "' -H 'Content-Type: application/json' --data-binary @" + proc_.dir() + "/req.json http://127.0.0.1:" +
               std::to_string(proc_.port()) + path);
  }

 private:
  Server() : proc_("parley-cpp-mod", config) {}
  static std::string config(const std::string& dir, std::string&) {
    return "[server]\n"
           "listen = \"127.0.0.1:0\"\n"
           "data_dir = \"" + dir + "/data\"\n"
           "log_level = \"warn\"\n\n"
           "[tenants.demo]\n"
           "secret = \"sdk-cpp-mod-secret-0123456789abcdef\"\n"
           "api_key = \"" + std::string(kApiKey) + "\"\n";
  }

  ServerProcess proc_;
};

std::unique_ptr<Client> make_client(const std::string& user, const std::string& enc) {
  ClientOptions o;
  o.url = Server::get().url();
  o.token = Server::get().token(user);
  o.transport = make_default_transport();
  o.codec = enc == "msgpack" ? msgpack_codec() : json_codec();
  return std::make_unique<Client>(std::move(o));
}

bool run_until(const std::vector<Client*>& clients, const std::function<bool()>& done,
               std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < end) {
    for (Client* c : clients) c->poll(5ms);
  }
  return done();
}

std::string describe(const Message& m) {
  switch (m.kind) {
    case EntryKind::edit: return "edit " + std::to_string(m.seq) + ">" + std::to_string(m.target) + " " + m.body.dump();
    case EntryKind::deletion: return "delete " + std::to_string(m.seq) + ">" + std::to_string(m.target);
    default:
      return "msg " + std::to_string(m.seq) + (m.deleted ? " deleted" : " " + m.body.dump()) +
             (m.edited >= 0 ? " edited" : "");
  }
}

class ModerationServer : public ::testing::TestWithParam<std::string> {};

TEST_P(ModerationServer, EditAndDeleteLiveInHistoryAndOnAResume) {
  if (!Server::get().ok()) GTEST_SKIP() << Server::get().why();
  const std::string enc = GetParam();
  const std::string name = "chat:mod-" + enc;
  auto alice = make_client("alice", enc);
  auto bob = make_client("bob", enc);
  Channel a = alice->channel(name);
  Channel b = bob->channel(name);
  std::vector<std::string> live;
  b.on_msg([&](const Message& m) { live.push_back(describe(m)); });
  b.on_edit([&](const Message& m) { live.push_back(describe(m)); });
  b.on_delete([&](const Message& m) { live.push_back(describe(m)); });
  int joined = 0;
  a.join([&](const Result<Joined>& r) { joined += r.ok(); });
  b.join([&](const Result<Joined>& r) { joined += r.ok(); });
  std::vector<Client*> both = {alice.get(), bob.get()};
  ASSERT_TRUE(run_until(both, [&] { return joined == 2; }));
  std::vector<int64_t> acks;
  a.publish({{"t", "tpyo"}}, [&](const Result<Ack>& r) { acks.push_back(r.ok() ? r.value().seq : -1); });
  a.publish({{"t", "oops"}}, [&](const Result<Ack>& r) { acks.push_back(r.ok() ? r.value().seq : -1); });
  ASSERT_TRUE(run_until(both, [&] { return acks.size() == 2; }));
  ASSERT_EQ(acks, (std::vector<int64_t>{1, 2}));
  std::vector<Result<Moderated>> replies;
  a.edit(1, {{"t", "fixed"}}, [&](const Result<Moderated>& r) { replies.push_back(r); });
  ASSERT_TRUE(run_until(both, [&] { return replies.size() == 1; }));
  a.delete_message(2, [&](const Result<Moderated>& r) { replies.push_back(r); });
  ASSERT_TRUE(run_until(both, [&] { return replies.size() == 2 && live.size() == 4; }));
  for (auto& r : replies) ASSERT_TRUE(r.ok()) << r.error().code << ": " << r.error().message;
  EXPECT_EQ(replies[0].value().seq, 3);
  EXPECT_EQ(replies[0].value().target, 1);
  EXPECT_EQ(replies[1].value().seq, 4);
  EXPECT_EQ(replies[1].value().target, 2);
  EXPECT_EQ(live, (std::vector<std::string>{"msg 1 {\"t\":\"tpyo\"}", "msg 2 {\"t\":\"oops\"}",
                                            "edit 3>1 {\"t\":\"fixed\"}", "delete 4>2"}));
  EXPECT_EQ(b.last_seq(), 4);

  // History: current versions, then the entries at their own seqs.
  std::vector<std::string> page;
  bool paged = false;
  b.history({0, {}, 100}, [&](const Result<std::vector<Message>>& r) {
    ASSERT_TRUE(r.ok()) << r.error().code;
    for (auto& m : r.value()) page.push_back(describe(m));
    paged = true;
  });
  ASSERT_TRUE(run_until(both, [&] { return paged; }));
  EXPECT_EQ(page, (std::vector<std::string>{"msg 1 {\"t\":\"fixed\"} edited", "msg 2 deleted",
                                            "edit 3>1 {\"t\":\"fixed\"}", "delete 4>2"}));

  // Refusals: the server's codes, and no seq taken.
  Result<Moderated> stranger = Error{"none", ""};
  Result<Moderated> nothing = Error{"none", ""};
  Result<Moderated> tombstone = Error{"none", ""};
  int refused = 0;
  b.edit(1, {{"t", "mine now"}}, [&](const Result<Moderated>& r) { stranger = r, refused++; });
  a.delete_message(999, [&](const Result<Moderated>& r) { nothing = r, refused++; });
  a.edit(2, {{"t", "back"}}, [&](const Result<Moderated>& r) { tombstone = r, refused++; });
  ASSERT_TRUE(run_until(both, [&] { return refused == 3; }));
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.error().code, "forbidden");
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().code, "not_found");
  ASSERT_FALSE(tombstone.ok());
  EXPECT_EQ(tombstone.error().code, "not_found") << "a delete is final";

  // A resume from `since` replays the entries in seq order.
  auto carol = make_client("carol", enc);
  Channel c = carol->channel(name);
  std::vector<std::string> resumed;
  c.on_msg([&](const Message& m) { resumed.push_back(describe(m)); });
  c.on_edit([&](const Message& m) { resumed.push_back(describe(m)); });
  c.on_delete([&](const Message& m) { resumed.push_back(describe(m)); });
  c.join(nullptr, 1);
  std::vector<Client*> all = {alice.get(), bob.get(), carol.get()};
  ASSERT_TRUE(run_until(all, [&] { return resumed.size() == 3; }));
  EXPECT_EQ(resumed[0], "msg 2 deleted") << "a backfill answers current versions";
  EXPECT_EQ(resumed[1], "edit 3>1 {\"t\":\"fixed\"}");
  EXPECT_EQ(resumed[2], "delete 4>2");
  EXPECT_EQ(c.last_seq(), 4);
}

TEST_P(ModerationServer, AKickEndsTheChannelWithItsReason) {
  if (!Server::get().ok()) GTEST_SKIP() << Server::get().why();
  const std::string enc = GetParam();
  const std::string name = "chat:kick-" + enc;
  auto dave = make_client("dave", enc);
  Channel d = dave->channel(name);
  std::vector<Kicked> kicks;
  d.on_kicked([&](const Kicked& k) { kicks.push_back(k); });
  bool joined = false;
  d.join([&](const Result<Joined>& r) { joined = r.ok(); });
  ASSERT_TRUE(run_until({dave.get()}, [&] { return joined; }));
  const std::string answer = Server::get().post("/v1/kick", R"({"user":"dave","ch":")" + name +
                                                                R"(","reason":"spamming links"})");
  EXPECT_NE(answer.find("\"kicked\":1"), std::string::npos) << answer;
  ASSERT_TRUE(run_until({dave.get()}, [&] { return !kicks.empty(); }));
  EXPECT_EQ(kicks[0].ch, name);
  EXPECT_EQ(kicks[0].reason, "spamming links");
  EXPECT_FALSE(d.joined());
  Result<Ack> ack = Error{"none", ""};
  d.publish({{"t", 1}}, [&](const Result<Ack>& r) { ack = r; });
  dave->poll();
  ASSERT_FALSE(ack.ok());
  EXPECT_EQ(ack.error().code, "forbidden") << "not a member any more: join() first";
}

INSTANTIATE_TEST_SUITE_P(Encodings, ModerationServer, ::testing::Values("json", "msgpack"));

}  // namespace
}  // namespace parley::testing
