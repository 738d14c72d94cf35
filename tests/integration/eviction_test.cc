// State of abandoned channels is given back (issue 11, finding 8), and the dedupe
// window still answers `dup` after its channel was unloaded and reloaded: the hub
// unloads idle channels, the embedded store's writer and the memory store forget
// them, ephemeral history has an age bound and a memory budget.
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

int64_t metric(uint16_t port, const std::string& name) { return metric_value(port, name); }

// Polls until pred() holds or `limit` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return pred();
}

ServerSpec spec(const std::string& server_extra, const std::string& ns_extra = "") {
  return spec_with_tenants(default_tenants_toml("publish_per_conn_sec = 0\n"
                                                "[tenants.demo.namespaces.tmp]\ndurable = false\n" +
                                                ns_extra),
                           "channel_idle_s = 1\n" + server_extra);
}

// Joins `ch`, publishes one message with `id`, leaves; returns the ack.
std::string touch(Client& c, const std::string& ch, const std::string& id,
                  const std::string& body = "1") {
  c.join(ch);
  c.send(pub_frame(ch, id, body, 1));
  std::string ack = c.expect("ack");
  c.send(R"({"op":"leave","ch":")" + ch + R"("})");
  c.expect("left");
  return ack;
}

TEST(Eviction, AbandonedChannelsLeaveTheHubAndBothStores) {
  ServerProcess server(spec(""));
  server.start();
  const uint16_t port = server.http_port();
  auto c = connect_as(port, "alice");
  constexpr int kChannels = 200;
  for (int i = 0; i < kChannels; ++i) {
    ASSERT_FALSE(touch(*c, "chat:gone-" + std::to_string(i), "m").empty());
    ASSERT_FALSE(touch(*c, "tmp:gone-" + std::to_string(i), "m").empty());
  }
  EXPECT_GE(metric(port, "parley_channels"), 1);
  EXPECT_EQ(metric(port, "parley_ephemeral_channels"), kChannels);
  EXPECT_EQ(metric(port, "parley_store_channels"), kChannels);
  const int64_t held = metric(port, "parley_ephemeral_memory_bytes");
  EXPECT_GT(held, kChannels * 500) << "each holds a message, a dedupe entry and a record";

  // channel_idle_s = 1: the hub unloads after 1 s, the stores forget after 2 s
  // (ephemeral: once the message has aged out too, history_ttl_s below).
  EXPECT_TRUE(eventually([&] { return metric(port, "parley_channels") == 0; }, 10s));
  EXPECT_TRUE(eventually([&] { return metric(port, "parley_store_channels") == 0; }, 10s));
  // The ephemeral history is still there: idle alone does not drop it.
  EXPECT_EQ(metric(port, "parley_ephemeral_channels"), kChannels);
  EXPECT_EQ(http_history_all(port, "tmp:gone-7").size(), 1u);
  // A durable channel written again after its writer state was forgotten goes on
  // from its stored seq.
  std::string ack = touch(*c, "chat:gone-3", "m2");
  EXPECT_EQ(json_int(ack, "seq"), 2) << ack;
}

TEST(Eviction, EphemeralHistoryAgesOutAndItsChannelIsForgotten) {
  ServerProcess server(spec("", "history_ttl_s = 1\ndedupe_window_s = 1\n"));
  server.start();
  const uint16_t port = server.http_port();
  auto c = connect_as(port, "alice");
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(touch(*c, "tmp:old-" + std::to_string(i), "m").empty());
  EXPECT_EQ(metric(port, "parley_ephemeral_channels"), 100);
  EXPECT_TRUE(eventually([&] { return metric(port, "parley_ephemeral_channels") == 0; }, 15s))
      << metric(port, "parley_ephemeral_channels");
  EXPECT_EQ(metric(port, "parley_ephemeral_memory_bytes"), 0);
  EXPECT_EQ(metric(port, "parley_channels"), 0);
  EXPECT_TRUE(http_history_all(port, "tmp:old-5").empty());
}

TEST(Eviction, OverTheBudgetTheLeastRecentlyWrittenHistoryGoesFirst) {
  ServerProcess server(spec("ephemeral_memory_bytes = 300000\n", "history = 1000\n"));
  server.start();
  const uint16_t port = server.http_port();
  auto c = connect_as(port, "alice");
  const std::string body = "\"" + std::string(1000, 'x') + "\"";
  // 10 channels x 50 messages x ~1.2 KB: about twice the budget.
  for (int ch = 0; ch < 10; ++ch) {
    const std::string name = "tmp:big-" + std::to_string(ch);
    c->join(name);
    for (int i = 0; i < 50; ++i) {
      c->send(pub_frame(name, "m" + std::to_string(i), body, i));
      ASSERT_FALSE(c->expect("ack").empty());
    }
    std::this_thread::sleep_for(5ms);  // distinct write times
  }
  EXPECT_TRUE(eventually([&] { return metric(port, "parley_ephemeral_evictions_total") > 0; }, 10s));
  EXPECT_LE(metric(port, "parley_ephemeral_memory_bytes"), 300000);
  EXPECT_TRUE(http_history_all(port, "tmp:big-0").empty()) << "written first, dropped first";
  EXPECT_EQ(http_history_all(port, "tmp:big-9").size(), 50u) << "written last, kept";
}

TEST(Eviction, DedupeAnswersAcrossAnUnloadAndReload) {
  ServerProcess server(spec(""));
  server.start();
  const uint16_t port = server.http_port();
  auto c = connect_as(port, "alice");
  for (const std::string ch : {"chat:dd", "tmp:dd"}) {
    SCOPED_TRACE(ch);
    std::string first = touch(*c, ch, "same-id");
    EXPECT_EQ(json_bool(first, "dup"), false) << first;
    // Twice back to back: the second is answered with the first's seq.
    c->join(ch);
    c->send(pub_frame(ch, "x", "1", 7));
    c->send(pub_frame(ch, "x", "1", 8));
    std::string a1 = c->expect("ack"), a2 = c->expect("ack");
    EXPECT_EQ(json_int(a1, "seq"), json_int(a2, "seq"));
    EXPECT_NE(json_bool(a1, "dup"), json_bool(a2, "dup"));
    c->send(R"({"op":"leave","ch":")" + ch + R"("})");
    c->expect("left");
  }
  ASSERT_TRUE(eventually([&] { return metric(port, "parley_channels") == 0; }, 10s));
  for (const std::string ch : {"chat:dd", "tmp:dd"}) {
    SCOPED_TRACE(ch);
    std::string again = touch(*c, ch, "same-id");
    EXPECT_EQ(json_bool(again, "dup"), true) << again;
    EXPECT_EQ(json_int(again, "seq"), 1) << again;
    // Another user's message with the same id is not a duplicate.
    auto bob = connect_as(port, "bob");
    std::string other = touch(*bob, ch, "same-id");
    EXPECT_EQ(json_bool(other, "dup"), false) << other;
  }
}

}  // namespace
}  // namespace parley::testing
