// The connection state machine (ClientCore) against a fake transport and
// clock: hello, welcome, drops, backoff, bye, auth failures, liveness, and
// the rule that callbacks run only inside poll().
#include <gtest/gtest.h>

#include "fake_transport.h"

namespace parley::testing {
namespace {

TEST(Client, SaysHelloWithTheTokenAndReportsTheWelcome) {
  Harness h;
  Welcome seen;
  h.client->on_open([&](const Welcome& w) { seen = w; });
  h.client->connect();
  EXPECT_EQ(h.client->state(), ClientState::connecting);
  h.welcome("c7");
  auto hello = h.t->sent("hello");
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(hello[0]["v"], 1);
  EXPECT_EQ(hello[0]["token"], "T1");
  EXPECT_EQ(seen.conn, "c7");
  EXPECT_EQ(seen.user, "u1");
  EXPECT_EQ(h.client->state(), ClientState::open);
}

TEST(Client, ReconnectsWithEqualJitterBackoffWithinItsBounds) {
  // Equal jitter: attempt k waits uniformly in [cap/2, cap], cap = min(max, min * factor^k).
  for (double u : {0.0, 0.999}) {
    Harness h([](ClientOptions& o) { o.reconnect = {true, 100, 1000, 2}; });
    h.u = u;
    std::vector<int64_t> delays;
    h.client->on_disconnect([&](const Disconnect& d) {
      EXPECT_TRUE(d.will_reconnect);
      delays.push_back(d.delay_ms);
    });
    h.client->connect();
    for (int k = 0; k < 6; k++) {
      h.t->drop();
      h.poll();
      ASSERT_EQ(delays.size(), static_cast<size_t>(k + 1));
      const int64_t cap = std::min<int64_t>(1000, 100 << k);
      EXPECT_GE(delays[k], cap / 2);
      EXPECT_LE(delays[k], cap);
      const int before = h.t->count();
      h.advance(delays[k] - 1);
      EXPECT_EQ(h.t->count(), before) << "reconnected before its delay";
      h.advance(1);
      EXPECT_EQ(h.t->count(), before + 1);
    }
  }
}

TEST(Client, BackoffStartsOverAfterAWelcome) {
  Harness h([](ClientOptions& o) { o.reconnect = {true, 100, 10000, 2}; });
  h.u = 0.999;
  std::vector<int64_t> delays;
  h.client->on_disconnect([&](const Disconnect& d) { delays.push_back(d.delay_ms); });
  h.client->connect();
  h.t->drop();
  h.poll();
  h.advance(delays.back());
  h.t->drop();
  h.poll();
  h.advance(delays.back());
  h.welcome();
  h.t->drop();
  h.poll();
  ASSERT_EQ(delays.size(), 3u);
  EXPECT_EQ(delays[0], 100);
  EXPECT_EQ(delays[1], 200);
  EXPECT_EQ(delays[2], 100);
}

TEST(Client, ByeWaitsReconnectMsPlusUpToHalfOfIt) {
  for (double u : {0.0, 0.999}) {
    Harness h;
    h.u = u;
    Bye bye;
    Disconnect d;
    h.client->on_bye([&](const Bye& b) { bye = b; });
    h.client->on_disconnect([&](const Disconnect& x) { d = x; });
    h.client->connect();
    h.welcome();
    h.t->frame({{"op", "bye"}, {"code", "draining"}, {"reconnect_ms", 2000}});
    h.t->drop(1001, "draining");
    h.poll();
    EXPECT_EQ(bye.code, "draining");
    EXPECT_EQ(bye.reconnect_ms, 2000);
    EXPECT_EQ(d.code, 1001);
    EXPECT_TRUE(d.was_open);
    EXPECT_GE(d.delay_ms, 2000);
    EXPECT_LE(d.delay_ms, 3000);
  }
}

TEST(Client, UnauthorizedWithAFixedTokenClosesForGood) {
  Harness h;
  std::vector<Disconnect> drops;
  bool closed = false;
  std::string error;
  h.client->on_disconnect([&](const Disconnect& d) { drops.push_back(d); });
  h.client->on_closed([&] { closed = true; });
  h.client->on_error([&](const Error& e) { error = e.code; });
  h.client->connect();
  h.t->open();
  h.poll();
  auto hello = h.t->sent("hello");
  h.t->frame({{"op", "error"}, {"rid", hello[0]["rid"]}, {"code", "unauthorized"}, {"msg", "expired"}});
  h.t->drop(4001, "unauthorized");
  h.poll();
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_FALSE(drops[0].will_reconnect);
  EXPECT_TRUE(closed);
  EXPECT_EQ(error, "unauthorized");
  EXPECT_EQ(h.client->state(), ClientState::closed);
  h.advance(60000);
  EXPECT_EQ(h.t->count(), 1);
}

TEST(Client, TokenProviderIsCalledBeforeEveryConnectAndGetsThreeTries) {
  int calls = 0;
  Harness h([&](ClientOptions& o) {
    o.token = "";
    o.token_provider = [&] { return "tok" + std::to_string(++calls); };
  });
  std::vector<Disconnect> drops;
  h.client->on_disconnect([&](const Disconnect& d) { drops.push_back(d); });
  h.client->connect();
  for (int i = 1; i <= 3; i++) {
    h.t->open();
    h.poll();
    EXPECT_EQ(h.t->sent("hello").at(0)["token"], "tok" + std::to_string(i));
    // Raw TCP has no close codes: the hello's error says it.
    h.t->frame({{"op", "error"}, {"rid", h.t->sent("hello")[0]["rid"]}, {"code", "unauthorized"}});
    h.t->drop(1006, "eof");
    h.poll();
    ASSERT_EQ(drops.size(), static_cast<size_t>(i));
    EXPECT_EQ(drops.back().code, 4001) << "the hello's error names the close";
    if (i < 3) {
      EXPECT_TRUE(drops.back().will_reconnect);
      h.advance(drops.back().delay_ms);
    }
  }
  EXPECT_FALSE(drops.back().will_reconnect);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(h.client->state(), ClientState::closed);
}

TEST(Client, WithoutACloseCodeTheByeNamesTheDrop) {
  // Raw TCP has no close codes: a slow consumer's drop reads as the 4010 a
  // WebSocket carries, and the client reconnects.
  Harness h;
  Disconnect d;
  h.client->on_disconnect([&](const Disconnect& x) { d = x; });
  h.client->connect();
  h.welcome();
  h.t->frame({{"op", "bye"}, {"code", "slow_consumer"}});
  h.t->drop(1006, "eof");
  h.poll();
  EXPECT_EQ(d.code, 4010);
  EXPECT_EQ(d.reason, "slow_consumer");
  EXPECT_TRUE(d.will_reconnect);
  h.advance(d.delay_ms);
  h.welcome("c2");
  h.t->drop(1006, "eof");  // a later plain drop is not a slow consumer's
  h.poll();
  EXPECT_EQ(d.code, 1006);
}

TEST(Client, BadVersionCloseIsFinal) {
  Harness h;
  h.client->connect();
  h.t->open();
  h.t->drop(4002, "bad version");
  h.poll();
  EXPECT_EQ(h.client->state(), ClientState::closed);
}

TEST(Client, ConnectTimeoutAbandonsTheAttempt) {
  Harness h([](ClientOptions& o) { o.connect_timeout_ms = 5000; });
  Disconnect d;
  h.client->on_disconnect([&](const Disconnect& x) { d = x; });
  h.client->connect();
  h.t->open();  // the socket opens but no welcome comes
  h.advance(4999);
  EXPECT_EQ(d.code, 0);
  h.advance(1);
  EXPECT_EQ(d.code, 4000);
  EXPECT_EQ(d.reason, "connect timeout");
  EXPECT_TRUE(d.will_reconnect);
  EXPECT_FALSE(h.t->alive());
}

TEST(Client, PingsWhenQuietAndDropsADeadConnection) {
  Harness h;
  Disconnect d;
  h.client->on_disconnect([&](const Disconnect& x) { d = x; });
  h.client->connect();
  h.welcome("c1", 2000);
  h.advance(2500);
  EXPECT_FALSE(h.t->sent("ping").empty()) << "no ping after a quiet heartbeat period";
  EXPECT_EQ(d.code, 0);
  h.advance(2 * 2000 + 2000 - 2500 - 100);  // just short of two periods plus min(period, 5 s)
  EXPECT_EQ(d.code, 0);
  h.advance(1100);
  EXPECT_EQ(d.code, 4000);
  EXPECT_EQ(d.reason, "no traffic from the server");
  EXPECT_TRUE(d.will_reconnect);
}

TEST(Client, TrafficKeepsTheConnectionAlive) {
  Harness h;
  bool dropped = false;
  h.client->on_disconnect([&](const Disconnect&) { dropped = true; });
  h.client->connect();
  h.welcome("c1", 2000);
  for (int i = 0; i < 20; i++) {
    h.advance(1000);
    h.t->frame({{"op", "pong"}, {"rid", 999999}});
  }
  EXPECT_FALSE(dropped);
}

TEST(Client, SendsAPingWhenItHasSentNothingForHalfAPeriod) {
  // Raw TCP has no server pings: a client silent for two periods is closed.
  Harness h;
  h.client->connect();
  h.welcome("c1", 4000);
  h.t->frame({{"op", "pong"}, {"rid", 999999}});
  h.advance(1000);
  h.t->frame({{"op", "pong"}, {"rid", 999999}});
  h.advance(2100);
  EXPECT_FALSE(h.t->sent("ping").empty());
}

TEST(Client, ABatchIsDispatchedInOrderAndABadFrameIsAnError) {
  Harness h;
  std::vector<std::string> seen;
  std::string err;
  h.client->on_direct([&](const Direct& d) { seen.push_back(d.body.get<std::string>()); });
  h.client->on_error([&](const Error& e) { err = e.code; });
  h.client->connect();
  h.welcome();
  h.t->frame(Json::array({{{"op", "direct"}, {"from", "server"}, {"body", "a"}},
                          {{"op", "direct"}, {"from", "server"}, {"body", "b"}}}));
  h.t->raw("not json");
  h.t->raw("[1,2]");
  h.t->frame({{"op", "direct"}, {"from", "server"}, {"body", "c"}});
  h.poll();
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(err, "bad_frame");
  EXPECT_EQ(h.client->state(), ClientState::open);
}

TEST(Client, CallbacksOfCallsMadeOutsidePollRunInTheNextPoll) {
  Harness h;
  h.client->close();
  bool called = false;
  h.client->channel("chat:a").publish({{"x", 1}}, [&](const Result<Ack>& r) {
    called = true;
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "closed");
  });
  EXPECT_FALSE(called);
  h.client->poll();
  EXPECT_TRUE(called);
}

TEST(Client, CloseFailsPendingWorkAndStopsReconnecting) {
  Harness h;
  h.client->connect();
  h.welcome();
  Result<std::vector<Message>> got = Error{"none", ""};
  h.client->channel("chat:a").history({1, {}, {}}, [&](const Result<std::vector<Message>>& r) { got = r; });
  bool closed = false;
  h.client->on_closed([&] { closed = true; });
  h.client->close();
  h.poll();
  EXPECT_TRUE(closed);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "closed");
  h.advance(60000);
  EXPECT_EQ(h.t->count(), 1);
}

TEST(Client, RequestsWaitForTheConnectionAndSurviveADrop) {
  Harness h;
  h.client->connect();
  Result<int64_t> rtt = Error{"none", ""};
  Result<Json> reply = Error{"none", ""};
  h.client->request({{"op", "history"}, {"ch", "chat:a"}, {"after", 0}}, [&](const Result<Json>& r) { reply = r; });
  h.welcome();
  ASSERT_EQ(h.t->sent("history").size(), 1u);
  h.t->drop();
  h.poll();
  h.advance(10000);
  h.welcome("c2");
  auto resent = h.t->sent("history");
  ASSERT_EQ(resent.size(), 1u) << "the request was not resent after the drop";
  h.t->frame({{"op", "history"}, {"rid", resent[0]["rid"]}, {"ch", "chat:a"}, {"msgs", Json::array()}});
  h.poll();
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply.value()["op"], "history");
}

TEST(Client, RetryableRequestErrorsAreRetriedAfterRetryMs) {
  Harness h;
  std::vector<Retry> retries;
  h.client->on_retry([&](const Retry& r) { retries.push_back(r); });
  h.client->connect();
  h.welcome();
  Result<Json> reply = Error{"none", ""};
  h.client->request({{"op", "history"}, {"ch", "chat:a"}, {"after", 0}}, [&](const Result<Json>& r) { reply = r; });
  auto first = h.t->sent("history");
  h.t->frame({{"op", "error"}, {"rid", first[0]["rid"]}, {"code", "unavailable"}, {"retry_ms", 400}});
  h.poll();
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_EQ(retries[0].op, "history");
  EXPECT_EQ(retries[0].retry_ms, 400);
  h.advance(399);
  EXPECT_EQ(h.t->sent("history").size(), 1u);
  h.advance(100);  // 400 plus at most 25 %: with u = 0.5, 450
  EXPECT_EQ(h.t->sent("history").size(), 2u);
}

}  // namespace
}  // namespace parley::testing
