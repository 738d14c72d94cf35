// Resuming with `join` + `since`, and reading history (PROTOCOL.md "Client ops"):
// `joined` comes first, then every msg with seq > since, in order, before any
// newer live msg; `recovered` says whether history still held all of them.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

// No rate limits; `short` keeps only the 10 newest messages of a channel, `long`
// far more than a test publishes.
constexpr const char* kTenantExtra =
    "publish_per_sec = 0\npublish_per_conn_sec = 0\n"
    "\n[tenants.demo.namespaces.short]\nhistory = 10\n"
    "\n[tenants.demo.namespaces.long]\nhistory = 1000000\n";

// The pub of message number i: id m<i>, body {"i":<i>}, rid i.
std::string numbered_pub(const std::string& ch, int i) {
  return pub_frame(ch, "m" + std::to_string(i), R"({"i":)" + std::to_string(i) + "}", i);
}

// Asserts that `m` is the msg the helpers publish as number i.
void expect_msg(const std::optional<std::string>& m, const std::string& ch, int i,
                const std::string& from = "pub") {
  ASSERT_TRUE(m.has_value()) << "no msg " << i;
  EXPECT_EQ(op_of(*m), "msg") << *m;
  EXPECT_EQ(json_str(*m, "ch"), ch) << *m;
  EXPECT_EQ(json_int(*m, "seq"), i) << *m;
  EXPECT_EQ(json_str(*m, "from"), from) << *m;
  EXPECT_EQ(json_str(*m, "id"), "m" + std::to_string(i)) << *m;
  EXPECT_EQ(json_raw(*m, "body"), R"({"i":)" + std::to_string(i) + "}") << *m;
}

class ResumeTest : public SharedServerTest<ResumeTest> {
 public:
  static ServerSpec server_spec() { return spec_with_tenants(default_tenants_toml(kTenantExtra)); }

 protected:
  // A joined publisher ("pub") for `ch`.
  static std::unique_ptr<Client> publisher(const std::string& ch) {
    auto c = connect_as("pub");
    EXPECT_EQ(op_of(c->join(ch)), "joined");
    return c;
  }

  // Publishes m<first>..m<last> (expected to get those seqs) and waits for their acks.
  static void publish(Client& p, const std::string& ch, int first, int last) {
    for (int i = first; i <= last; ++i) p.send(numbered_pub(ch, i));
    for (int i = first; i <= last; ++i) {
      auto ack = p.expect("ack");
      ASSERT_EQ(json_int(ack, "seq"), json_int(ack, "rid")) << ack;
    }
  }
};

TEST_F(ResumeTest, JoinWithSinceReplaysTheMissedMessagesInOrderBeforeLiveOnes) {
  const std::string ch = "chat:resume";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 10);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 4, 7));
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(op_of(*joined), "joined") << *joined;  // first frame of the channel
  EXPECT_EQ(json_int(*joined, "rid"), 7);
  EXPECT_EQ(json_str(*joined, "ch"), ch);
  EXPECT_EQ(json_int(*joined, "seq"), 10);
  EXPECT_EQ(json_bool(*joined, "recovered"), true);
  for (int i = 5; i <= 10; ++i) expect_msg(bob->next(), ch, i);
  publish(*pub, ch, 11, 11);
  expect_msg(bob->next(), ch, 11);  // the live message follows the replay
}

TEST_F(ResumeTest, ReconnectWithSinceWhilePublishingLosesAndRepeatsNothing) {
  const std::string ch = "long:resume-live";
  constexpr int kMaxMessages = 20000;  // a bound; the run stops far earlier
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false};
  auto pub = publisher(ch);
  auto bob = connect_as("bob");
  EXPECT_EQ(op_of(bob->join(ch)), "joined");
  // Publishes in small pipelined batches until told to stop.
  std::thread publishing([&] {
    for (int next = 1; next <= kMaxMessages && !stop.load();) {
      const int last = std::min(next + 9, kMaxMessages);
      for (int i = next; i <= last; ++i) pub->send(numbered_pub(ch, i));
      for (int i = next; i <= last; ++i) {
        if (pub->expect("ack").empty()) return;
        acked.store(i);
      }
      next = last + 1;
    }
  });

  // Bob reads a while, then drops off at some seq S.
  int64_t seen = 0;
  while (seen < 100) {
    auto m = bob->next();
    ASSERT_TRUE(m.has_value()) << "stream stalled at " << seen;
    if (op_of(*m) != "msg") continue;
    ASSERT_EQ(json_int(*m, "seq"), seen + 1) << *m;
    seen = *json_int(*m, "seq");
  }
  bob.reset();
  // Wait until Bob has missed at least 100 more, then resume while publishing goes on.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (acked.load() < seen + 100 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto back = connect_as("bob");
  back->send(join_frame(ch, seen, 9));
  auto joined = back->next();
  ASSERT_TRUE(joined.has_value());
  ASSERT_EQ(op_of(*joined), "joined") << *joined;
  EXPECT_EQ(json_bool(*joined, "recovered"), true) << *joined;
  const int64_t latest = json_int(*joined, "seq").value_or(0);
  EXPECT_GE(latest, seen + 100);
  // Keep publishing until Bob has received well past the seam.
  int64_t expect_seq = seen + 1;
  while (expect_seq <= latest + 200) {
    auto m = back->next();
    ASSERT_TRUE(m.has_value()) << "stream stalled before seq " << expect_seq;
    if (op_of(*m) != "msg") continue;
    ASSERT_EQ(json_int(*m, "seq"), expect_seq) << *m;
    ++expect_seq;
  }
  stop.store(true);
  publishing.join();
  const int last = acked.load();
  while (expect_seq <= last) {
    auto m = back->next();
    ASSERT_TRUE(m.has_value()) << "stream stalled before seq " << expect_seq;
    if (op_of(*m) != "msg") continue;
    ASSERT_EQ(json_int(*m, "seq"), expect_seq) << *m;
    ++expect_seq;
  }
}

TEST_F(ResumeTest, SinceAboveTheLatestSeqIsNotRecovered) {
  const std::string ch = "chat:resume-ahead";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 3);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 10, 2));
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(op_of(*joined), "joined") << *joined;
  EXPECT_EQ(json_int(*joined, "seq"), 3);
  EXPECT_EQ(json_bool(*joined, "recovered"), false);
  publish(*pub, ch, 4, 4);
  expect_msg(bob->next(), ch, 4);  // nothing was replayed before it
}

TEST_F(ResumeTest, SinceAtTheLatestSeqIsRecoveredWithNothingToReplay) {
  const std::string ch = "chat:resume-current";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 5);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 5, 2));
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(op_of(*joined), "joined") << *joined;
  EXPECT_EQ(json_int(*joined, "seq"), 5);
  EXPECT_EQ(json_bool(*joined, "recovered"), true);
  publish(*pub, ch, 6, 6);
  expect_msg(bob->next(), ch, 6);
}

TEST_F(ResumeTest, SinceOlderThanTheNamespaceHistoryGivesItsNewestMessagesNotRecovered) {
  const std::string ch = "short:old";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 25);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 2, 2));
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(op_of(*joined), "joined") << *joined;
  EXPECT_EQ(json_int(*joined, "seq"), 25);
  EXPECT_EQ(json_bool(*joined, "recovered"), false);
  for (int i = 16; i <= 25; ++i) expect_msg(bob->next(), ch, i);
  publish(*pub, ch, 26, 26);
  expect_msg(bob->next(), ch, 26);
}

TEST_F(ResumeTest, SinceOneBeyondTheNamespaceHistoryIsNotRecovered) {
  const std::string ch = "short:edge-out";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 25);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 14, 2));  // 11 missed, 10 kept
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(json_bool(*joined, "recovered"), false) << *joined;
  for (int i = 16; i <= 25; ++i) expect_msg(bob->next(), ch, i);
}

TEST_F(ResumeTest, SinceExactlyTheNamespaceHistoryBehindIsRecovered) {
  const std::string ch = "short:edge-in";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 25);
  auto bob = connect_as("bob");
  bob->send(join_frame(ch, 15, 2));  // 10 missed, 10 kept
  auto joined = bob->next();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(json_bool(*joined, "recovered"), true) << *joined;
  for (int i = 16; i <= 25; ++i) expect_msg(bob->next(), ch, i);
  publish(*pub, ch, 26, 26);
  expect_msg(bob->next(), ch, 26);
}

TEST_F(ResumeTest, HistoryOpPagesForwardWithAfter) {
  const std::string ch = "chat:pages";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 120);
  auto reader = connect_as("reader");  // history needs no join
  reader->send(R"({"op":"history","ch":")" + ch + R"(","after":0,"rid":1})");
  auto first = reader->expect("history");
  EXPECT_EQ(json_int(first, "rid"), 1) << first;
  EXPECT_EQ(json_str(first, "ch"), ch);
  auto page = json_array_items(json_raw(first, "msgs").value_or(""));
  ASSERT_EQ(page.size(), 50u);  // the default limit
  for (int i = 1; i <= 50; ++i) expect_msg(page[i - 1], ch, i);
  reader->send(R"({"op":"history","ch":")" + ch + R"(","after":50,"limit":1000,"rid":2})");
  page = json_array_items(json_raw(reader->expect("history"), "msgs").value_or(""));
  ASSERT_EQ(page.size(), 70u);
  for (int i = 51; i <= 120; ++i) expect_msg(page[i - 51], ch, i);
  reader->send(R"({"op":"history","ch":")" + ch + R"(","after":120,"rid":3})");
  EXPECT_EQ(json_raw(reader->expect("history"), "msgs"), "[]");
}

TEST_F(ResumeTest, HttpHistoryPagesForwardWithAfter) {
  const std::string ch = "chat:http-pages";
  auto pub = publisher(ch);
  publish(*pub, ch, 1, 30);
  auto r = http_request(server_->http_port(), "GET", "/v1/history?ch=" + ch + "&after=0&limit=20",
                        "", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  auto page = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(page.size(), 20u) << r.body;
  for (int i = 1; i <= 20; ++i) expect_msg(page[i - 1], ch, i);
  r = http_request(server_->http_port(), "GET", "/v1/history?ch=" + ch + "&after=20&limit=20", "",
                   kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  page = json_array_items(json_raw(r.body, "msgs").value_or(""));
  ASSERT_EQ(page.size(), 10u) << r.body;
  for (int i = 21; i <= 30; ++i) expect_msg(page[i - 21], ch, i);
}

}  // namespace
}  // namespace parley::testing
