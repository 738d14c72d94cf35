// Event streams over real sockets (PROTOCOL.md "Event streams and
// leaderboards", issue 12): emit, tail, per-partition order with many
// producers, idempotent retries, the Unix socket, bad input, and nothing
// acknowledged lost across a kill -9 of the server.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/event_client.h"
#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTopics = R"(
[tenants.demo.topics.hunt]
partitions = 4

[tenants.demo.topics.once]
partitions = 2

[tenants.demo.topics.solo]
partitions = 1

[tenants.demo.topics.bad]
partitions = 3

[tenants.demo.topics.lagged]
partitions = 1

[tenants.demo.topics.aged]
partitions = 1
retention_s = 2
)";

ServerSpec spec() {
  ServerSpec s;
  s.tenants_toml = default_tenants_toml() + kTopics;
  s.unix_socket = true;
  return s;
}

// Tails `topic` from earliest and reads events until `want` have come or 20 s.
std::vector<Delivered> tail_all(Client& c, const std::string& topic, size_t want) {
  c.send(R"({"op":"tail","rid":"t","topic":")" + topic + R"(","from":"earliest"})");
  const std::string tailing = c.expect("tailing");
  EXPECT_FALSE(tailing.empty());
  return read_events(c, want);
}

class EventStreamTest : public SharedServerTest<EventStreamTest> {
 public:
  static ServerSpec server_spec() { return spec(); }
};

TEST_F(EventStreamTest, EmitIsAcknowledgedWithOffsetsAndTailDeliversTheEvents) {
  auto gs = game_server(*server_);
  auto reader = game_server(*server_, Wire::kTcp);
  reader->send(R"({"op":"tail","rid":1,"topic":"solo","from":"earliest"})");
  const std::string tailing = reader->expect("tailing");
  EXPECT_EQ(json_int(tailing, "rid"), 1) << tailing;
  EXPECT_EQ(json_raw(tailing, "parts"), R"([{"p":0,"next":1}])") << tailing;

  gs->send(emit_frame("solo", {{"player-9", "e-1", R"({"x":1})", "pick"}, {"player-3", "", "[1,2]"}}, 7));
  const std::string emitted = gs->expect("emitted");
  EXPECT_EQ(json_int(emitted, "rid"), 7) << emitted;
  EXPECT_EQ(json_str(emitted, "topic"), "solo") << emitted;
  EXPECT_EQ(json_raw(emitted, "offs"), "[[0,1],[0,2]]") << emitted;
  EXPECT_EQ(json_raw(emitted, "dup"), "[false,false]") << emitted;

  const std::string ev = reader->expect("events");
  EXPECT_EQ(json_str(ev, "topic"), "solo") << ev;
  EXPECT_EQ(json_int(ev, "p"), 0) << ev;
  EXPECT_FALSE(json_raw(ev, "group")) << ev;
  auto evs = json_array_items(json_raw(ev, "evs").value_or(""));
  ASSERT_GE(evs.size(), 1u) << ev;
  EXPECT_EQ(json_int(evs[0], "off"), 1);
  EXPECT_EQ(json_str(evs[0], "key"), "player-9");
  EXPECT_EQ(json_str(evs[0], "type"), "pick");
  EXPECT_EQ(json_str(evs[0], "from"), "server");
  EXPECT_EQ(json_str(evs[0], "id"), "e-1");
  EXPECT_EQ(json_raw(evs[0], "body"), R"({"x":1})");
  EXPECT_TRUE(json_int(evs[0], "ts").has_value());
  if (evs.size() == 1) evs = json_array_items(json_raw(reader->expect("events"), "evs").value_or(""));
  else evs.erase(evs.begin());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(json_int(evs[0], "off"), 2);
  EXPECT_FALSE(json_str(evs[0], "id")) << evs[0];
  EXPECT_EQ(json_raw(evs[0], "body"), "[1,2]");

  // The stage histograms saw the events: each appended, and dispatched to the
  // reader (one observation per frame).
  const std::string m = http_request(server_->http_port(), "GET", "/metrics").body;
  for (auto [stage, least] : {std::pair{"event_append", 2}, std::pair{"event_dispatch", 1}}) {
    const std::string key = std::string("parley_stage_seconds_count{stage=\"") + stage + "\"} ";
    const size_t at = m.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GE(std::stoll(m.substr(at + key.size())), least) << key;
  }
  const std::string events_key = "parley_events_total{topic=\"demo/solo\"} ";
  ASSERT_NE(m.find(events_key), std::string::npos);
  EXPECT_GE(std::stoll(m.substr(m.find(events_key) + events_key.size())), 2);

  // A player (token) may tail too, and `latest` starts after the log's end.
  auto player = connect_as("p1");
  player->send(R"({"op":"tail","rid":2,"topic":"solo"})");
  EXPECT_EQ(json_raw(player->expect("tailing"), "parts"), R"([{"p":0,"next":3}])");
}

TEST_F(EventStreamTest, ManyProducersKeepEachPartitionInOrderWithNoGap) {
  constexpr int kProducers = 4, kEmits = 60, kPerEmit = 20, kKeys = 8, kWindow = 8;
  auto reader = game_server(*server_);
  std::vector<std::thread> threads;
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> acked(kProducers);  // id -> [p,off]
  std::atomic<int> errors{0};
  for (int w = 0; w < kProducers; ++w) {
    threads.emplace_back([&, w] {
      auto c = game_server(*server_, w % 2 ? Wire::kUnix : Wire::kTcp);
      std::map<int, int> counter;  // per key
      std::map<int64_t, std::vector<std::string>> ids_of;  // rid -> ids
      int sent = 0, answered = 0;
      while (answered < kEmits) {
        while (sent < kEmits && sent - answered < kWindow) {
          std::vector<TestEvent> evs;
          for (int i = 0; i < kPerEmit; ++i) {
            const int k = (sent * kPerEmit + i * 3 + w) % kKeys;
            const std::string id = "w" + std::to_string(w) + "-" + std::to_string(sent) + "-" + std::to_string(i);
            evs.push_back({"k" + std::to_string(k), id,
                           R"({"w":)" + std::to_string(w) + R"(,"n":)" + std::to_string(counter[k]++) + "}"});
            ids_of[sent].push_back(id);
          }
          c->send(emit_frame("hunt", evs, sent));
          ++sent;
        }
        const std::string r = c->expect("emitted", 10s);
        if (r.empty()) {
          ++errors;
          return;
        }
        const auto offs = emitted_offs(r);
        const auto& ids = ids_of[json_int(r, "rid").value_or(-1)];
        if (offs.size() != ids.size()) {
          ++errors;
          return;
        }
        for (size_t i = 0; i < ids.size(); ++i) acked[w][ids[i]] = offs[i];
        ++answered;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  const size_t total = kProducers * kEmits * kPerEmit;
  auto got = tail_all(*reader, "hunt", total);
  ASSERT_EQ(got.size(), total);
  expect_gap_free(got);
  // Each producer's events of one key arrive in the order it sent them, each
  // at the [p, off] its ack named.
  std::map<std::pair<int, std::string>, int> next_n;
  std::set<std::string> seen;
  for (const auto& d : got) {
    const int w = std::stoi(d.id.substr(1, d.id.find('-') - 1));
    ASSERT_TRUE(seen.insert(d.id).second) << "delivered twice: " << d.id;
    EXPECT_EQ(acked[w][d.id], std::make_pair(d.p, d.off)) << d.id;
    const int n = static_cast<int>(json_int(d.body, "n").value_or(-1));
    int& want = next_n[std::make_pair(w, d.key)];
    EXPECT_EQ(n, want++) << d.id << " of key " << d.key;
  }
}

TEST_F(EventStreamTest, RetriesWithTheSameIdAreAnsweredWithTheOriginalOffsets) {
  auto gs = game_server(*server_);
  const std::vector<TestEvent> evs = {
      {"a", "id-1", "1"}, {"b", "id-2", "2"}, {"c", "id-3", "3"}, {"z", "id-1", "4"}};
  gs->send(emit_frame("once", evs, 1));
  const std::string first = gs->expect("emitted");
  const auto offs = emitted_offs(first);
  ASSERT_EQ(offs.size(), 4u) << first;
  // An id repeated within one emit is a duplicate of the first.
  EXPECT_EQ(emitted_dups(first), (std::vector<bool>{false, false, false, true})) << first;
  EXPECT_EQ(offs[3], offs[0]);

  // The retry, pipelined twice from another connection of the same sender.
  auto again = game_server(*server_, Wire::kUnix);
  again->send(emit_frame("once", evs, 2));
  again->send(emit_frame("once", evs, 3));
  for (int i = 0; i < 2; ++i) {
    const std::string r = again->expect("emitted");
    EXPECT_EQ(emitted_offs(r), offs) << r;
    EXPECT_EQ(emitted_dups(r), (std::vector<bool>{true, true, true, true})) << r;
  }
  // Dedupe is per sender: a player's event with the same id is its own.
  auto player = connect_as("p7");
  player->send(emit_frame("once", {{"a", "id-1", "5"}}, 4));
  EXPECT_EQ(emitted_dups(player->expect("emitted")), std::vector<bool>{false});

  auto reader = game_server(*server_);
  auto got = tail_all(*reader, "once", 4);
  EXPECT_EQ(got.size(), 4u);
  EXPECT_FALSE(reader->next(300ms).has_value()) << "more than the 4 distinct events were stored";
  expect_gap_free(got);
}

TEST_F(EventStreamTest, BadInputIsAnsweredWithItsCodeAndTheConnectionStays) {
  auto c = game_server(*server_);
  auto expect_code = [&](const std::string& frame, const std::string& code) {
    SCOPED_TRACE(frame);
    c->send(frame);
    const std::string e = c->expect("error");
    EXPECT_EQ(json_str(e, "code"), code) << e;
    c->send(R"({"op":"ping","rid":"after"})");
    EXPECT_EQ(json_str(c->expect("pong"), "rid"), "after");
    return e;
  };
  expect_code(R"({"op":"tail","rid":1,"topic":"bad","p":3})", "not_found");
  expect_code(R"({"op":"emit","rid":2,"topic":"nope","events":[{"key":"k","type":"t","body":1}]})",
              "not_found");
  // One invalid event fails the whole emit and nothing is appended.
  expect_code(R"({"op":"emit","rid":3,"topic":"bad","events":[{"key":"k","type":"t","body":1},{"key":"","type":"t","body":1}]})",
              "bad_request");
  expect_code(R"({"op":"emit","rid":4,"topic":"bad","events":[{"key":"k","type":"t","body":{"a":)", "bad_request");
  // A batch over 1000 events.
  std::vector<TestEvent> many(1001, TestEvent{"k", "", "1"});
  expect_code(emit_frame("bad", many, 50), "bad_request");
  // An event over max_message_bytes (64 KiB here).
  expect_code(emit_frame("bad", {{"k", "", "\"" + std::string(70 * 1024, 'x') + "\""}}, 5), "too_large");
  c->send(emit_frame("bad", {{"k", "", "1"}}, 6));
  const auto offs = emitted_offs(c->expect("emitted"));
  ASSERT_EQ(offs.size(), 1u);
  EXPECT_EQ(offs[0].second, 1) << "the failed emits appended something";
  const int64_t p = offs[0].first;
  // Offsets above the log's end + 1 (or below the first kept) are out_of_range.
  const std::string e = expect_code(
      R"({"op":"tail","rid":7,"topic":"bad","p":)" + std::to_string(p) + R"(,"from":5})", "out_of_range");
  EXPECT_EQ(json_int(e, "p"), p) << e;
  EXPECT_EQ(json_int(e, "earliest"), 1) << e;
  EXPECT_EQ(json_int(e, "latest"), 2) << e;
  EXPECT_EQ(json_int(e, "rid"), 7) << e;
  // The log's end + 1 is a valid start (the next event).
  c->send(R"({"op":"tail","rid":8,"topic":"bad","p":)" + std::to_string(p) + R"(,"from":2})");
  EXPECT_EQ(json_raw(c->expect("tailing"), "parts"),
            R"([{"p":)" + std::to_string(p) + R"(,"next":2}])");
  // A second tail of the topic replaces the first for the partitions it names.
  c->send(R"({"op":"tail","rid":9,"topic":"bad","p":)" + std::to_string(p) + R"(,"from":1})");
  EXPECT_FALSE(c->expect("tailing").empty());
  auto ev = c->expect("events");
  EXPECT_EQ(json_int(json_array_items(json_raw(ev, "evs").value_or(""))[0], "off"), 1) << ev;
  // leave ends the tail: nothing more arrives.
  c->send(R"({"op":"leave","rid":10,"topic":"bad"})");
  EXPECT_EQ(json_int(c->expect("left"), "rid"), 10);
  c->send(emit_frame("bad", {{"k", "", "2"}}, 11));
  EXPECT_FALSE(c->expect("emitted").empty());
  EXPECT_EQ(c->expect("events", 300ms), "");
}

// The consumer lag gauge (operations.md): per group and partition, the log's end
// minus the group's committed offset, as the group commits.
TEST_F(EventStreamTest, ConsumerLagIsTheLogsEndMinusTheGroupsCommit) {
  auto lag = [&]() -> std::optional<int64_t> {
    const std::string m = http_request(server_->http_port(), "GET", "/metrics").body;
    const std::string key = "parley_consumer_lag_events{group=\"demo/lagged/lg/0\"} ";
    const size_t at = m.find(key);
    if (at == std::string::npos) return std::nullopt;
    return std::stoll(m.substr(at + key.size()));
  };
  auto gs = game_server(*server_);
  std::vector<TestEvent> evs;
  for (int i = 0; i < 5; ++i) evs.push_back(TestEvent{"k" + std::to_string(i), "", std::to_string(i)});
  gs->send(emit_frame("lagged", evs, 1));
  ASSERT_EQ(emitted_offs(gs->expect("emitted")).size(), 5u);
  auto member = game_server(*server_);
  member->send(R"({"op":"consume","rid":2,"topic":"lagged","group":"lg"})");
  const std::string assigned = member->expect("assigned");
  const int64_t gen = json_int(assigned, "gen").value_or(0);
  std::vector<Delivered> got;
  const auto deadline = Clock::now() + 10s;
  while (got.size() < 5 && Clock::now() < deadline) {
    auto f = member->next(1s);
    if (f && op_of(*f) == "events") collect_events(*f, got);
  }
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(lag(), 5) << "a group that never committed lags by the whole log";
  member->send(R"({"op":"commit","rid":3,"topic":"lagged","group":"lg","gen":)" + std::to_string(gen) +
               R"(,"p":0,"off":2})");
  ASSERT_FALSE(member->expect("committed").empty());
  EXPECT_EQ(lag(), 3);
  gs->send(emit_frame("lagged", {{"k9", "", "9"}}, 4));
  ASSERT_FALSE(gs->expect("emitted").empty());
  EXPECT_EQ(lag(), 4) << "a new event grows the lag until it is committed";
  member->send(R"({"op":"commit","rid":5,"topic":"lagged","group":"lg","gen":)" + std::to_string(gen) +
               R"(,"p":0,"off":6})");
  ASSERT_FALSE(member->expect("committed").empty());
  EXPECT_EQ(lag(), 0);
}

// retention_s: events older than the window stop being readable (the first kept
// offset moves past them) once the partition appends again.
TEST_F(EventStreamTest, RetentionByAgeMovesTheFirstKeptOffset) {
  auto gs = game_server(*server_);
  auto emit = [&](int rid, int n) {
    std::vector<TestEvent> evs;
    for (int i = 0; i < n; ++i) evs.push_back(TestEvent{"k", "", std::to_string(rid * 100 + i)});
    gs->send(emit_frame("aged", evs, rid));
    return emitted_offs(gs->expect("emitted"));
  };
  ASSERT_EQ(emit(1, 5).back().second, 5);
  std::this_thread::sleep_for(1200ms);
  ASSERT_EQ(emit(2, 1).back().second, 6);  // a new mark of the window
  auto reader = game_server(*server_);
  reader->send(R"({"op":"tail","rid":3,"topic":"aged","from":1})");
  EXPECT_EQ(json_raw(reader->expect("tailing"), "parts"), R"([{"p":0,"next":1}])")
      << "nothing is older than 2 s yet";
  std::this_thread::sleep_for(2500ms);
  ASSERT_EQ(emit(4, 1).back().second, 7);
  reader->send(R"({"op":"tail","rid":5,"topic":"aged","from":1})");
  const std::string e = reader->expect("error");
  EXPECT_EQ(json_str(e, "code"), "out_of_range") << e;
  EXPECT_EQ(json_int(e, "earliest"), 6) << e;
  EXPECT_EQ(json_int(e, "latest"), 8) << e;
  reader->send(R"({"op":"tail","rid":6,"topic":"aged","from":"earliest"})");
  EXPECT_EQ(json_raw(reader->expect("tailing"), "parts"), R"([{"p":0,"next":6}])");
}

TEST_F(EventStreamTest, HttpEmitIsFromServerAndDedupesWithTheGameServersIds) {
  const std::string body = R"({"events":[{"key":"h1","type":"t","body":{"a":1},"id":"http-1"},{"key":"h2","type":"t","body":2}]})";
  auto r = http_request(server_->http_port(), "POST", "/v1/events/solo", body, kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto offs = emitted_offs(r.body);
  ASSERT_EQ(offs.size(), 2u) << r.body;
  EXPECT_EQ(emitted_dups(r.body), (std::vector<bool>{false, false})) << r.body;
  // The same id from a game server connection (also "server") is a duplicate.
  auto gs = game_server(*server_);
  gs->send(emit_frame("solo", {{"h1", "http-1", R"({"a":1})"}}, 1));
  const std::string again = gs->expect("emitted");
  EXPECT_EQ(emitted_offs(again)[0], offs[0]) << again;
  EXPECT_EQ(emitted_dups(again), std::vector<bool>{true}) << again;
  EXPECT_EQ(http_request(server_->http_port(), "POST", "/v1/events/nope", body, kDemoApiKey).status, 404);
  EXPECT_EQ(http_request(server_->http_port(), "POST", "/v1/events/solo", R"({"events":[]})", kDemoApiKey).status,
            400);
  EXPECT_EQ(http_request(server_->http_port(), "POST", "/v1/events/solo", "[1]", kDemoApiKey).status, 400);
  EXPECT_EQ(http_request(server_->http_port(), "POST", "/v1/events/solo", body, "wrong").status, 401);
}

TEST(EventQuota, EventsOverTheTenantsRateAreRateLimited) {
  ServerProcess server(spec_with_tenants(default_tenants_toml("events_per_sec = 50\n") + kTopics));
  server.start();
  auto c = game_server(server);
  std::vector<TestEvent> forty(40, TestEvent{"k", "", "1"});
  c->send(emit_frame("hunt", forty, 1));
  EXPECT_FALSE(c->expect("emitted").empty());
  c->send(emit_frame("hunt", forty, 2));  // 80 within a second: over 50/s
  const std::string e = c->expect("error");
  EXPECT_EQ(json_str(e, "code"), "rate_limited") << e;
  EXPECT_GT(json_int(e, "retry_ms").value_or(0), 0) << e;
  EXPECT_EQ(json_int(e, "rid"), 2) << e;
  std::this_thread::sleep_for(std::chrono::milliseconds(json_int(e, "retry_ms").value_or(0) + 50));
  c->send(emit_frame("hunt", forty, 3));
  EXPECT_FALSE(c->expect("emitted").empty());
}

TEST(EventDurability, NothingAcknowledgedIsLostWhenTheServerIsKilled) {
  ServerProcess server(spec());
  server.start();
  // Producers emit with ids until the server dies under them.
  constexpr int kProducers = 3;
  std::vector<std::map<std::string, std::pair<int64_t, int64_t>>> acked(kProducers);
  std::vector<std::vector<std::string>> sent(kProducers);
  std::atomic<size_t> acked_total{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kProducers; ++w) {
    threads.emplace_back([&, w] {
      auto c = game_server(server, w == 0 ? Wire::kUnix : Wire::kTcp);
      std::map<int64_t, std::vector<std::string>> ids_of;
      int64_t rid = 0;
      size_t inflight = 0;
      while (!c->closed() && rid < 5000) {
        while (inflight < 4) {
          std::vector<TestEvent> evs;
          for (int i = 0; i < 10; ++i) {
            std::string id = "w" + std::to_string(w) + "-" + std::to_string(rid) + "-" + std::to_string(i);
            evs.push_back({"key-" + std::to_string(i), id, R"({"v":")" + id + R"("})"});
            sent[w].push_back(id);
            ids_of[rid].push_back(id);
          }
          c->send(emit_frame("hunt", evs, rid++));
          ++inflight;
        }
        auto r = c->next(2s);
        if (!r) break;
        if (op_of(*r) != "emitted") continue;
        --inflight;
        const auto offs = emitted_offs(*r);
        const auto& ids = ids_of[json_int(*r, "rid").value_or(-1)];
        for (size_t i = 0; i < ids.size() && i < offs.size(); ++i) acked[w][ids[i]] = offs[i];
        acked_total += ids.size();
      }
    });
  }
  const auto deadline = Clock::now() + 20s;
  while (acked_total < 3000 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_GE(acked_total.load(), 3000u);
  server.kill9();
  for (auto& t : threads) t.join();

  server.restart();
  auto reader = game_server(server);
  const size_t acked_count = [&] {
    size_t n = 0;
    for (auto& a : acked) n += a.size();
    return n;
  }();
  auto got = tail_all(*reader, "hunt", acked_count);
  while (auto more = reader->next(500ms)) {
    if (op_of(*more) == "events") collect_events(*more, got);
  }
  expect_gap_free(got);
  std::map<std::string, std::pair<int64_t, int64_t>> stored;
  for (const auto& d : got) {
    EXPECT_TRUE(stored.emplace(d.id, std::make_pair(d.p, d.off)).second) << "stored twice: " << d.id;
  }
  for (int w = 0; w < kProducers; ++w) {
    for (const auto& [id, at] : acked[w]) {
      auto it = stored.find(id);
      ASSERT_NE(it, stored.end()) << "acknowledged and lost: " << id;
      EXPECT_EQ(it->second, at) << id;
    }
  }
  // Retrying everything that was sent: what was stored answers dup with its
  // offsets (the dedupe window survived the crash), the rest is stored once.
  auto c = game_server(server);
  int64_t rid = 0;
  for (int w = 0; w < kProducers; ++w) {
    for (size_t i = 0; i < sent[w].size(); i += 10) {
      std::vector<TestEvent> evs;
      for (size_t k = i; k < i + 10 && k < sent[w].size(); ++k) {
        evs.push_back({"key-" + std::to_string(k - i), sent[w][k], R"({"v":")" + sent[w][k] + R"("})"});
      }
      c->send(emit_frame("hunt", evs, rid++));
      const std::string r = c->expect("emitted", 10s);
      const auto offs = emitted_offs(r);
      const auto dups = emitted_dups(r);
      ASSERT_EQ(offs.size(), evs.size()) << r;
      for (size_t k = 0; k < evs.size(); ++k) {
        auto it = stored.find(evs[k].id);
        if (it != stored.end()) {
          EXPECT_TRUE(dups[k]) << evs[k].id;
          EXPECT_EQ(offs[k], it->second) << evs[k].id;
        } else {
          EXPECT_FALSE(dups[k]) << evs[k].id;
        }
      }
    }
  }
}

// The segment log is the default (issue 31), but not for a data directory
// written before it was: there the topics stay in RocksDB, their events readable
// and their ids remembered across the upgrade. A fresh directory gets segments.
TEST(EventDurability, ADataDirectoryFromBeforeTheSegmentDefaultKeepsItsTopicsReadable) {
  // This test chooses topic_log itself (or leaves it unset), whatever the run's.
  struct RestoreEnv {
    std::optional<std::string> was;
    RestoreEnv() {
      if (const char* v = std::getenv("PARLEY_TEST_TOPIC_LOG")) was = v;
      ::unsetenv("PARLEY_TEST_TOPIC_LOG");
    }
    ~RestoreEnv() {
      if (was) ::setenv("PARLEY_TEST_TOPIC_LOG", was->c_str(), 1);
    }
  } restore;
  ServerSpec before = spec();
  before.server_extra = "topic_log = \"rocksdb\"";  // what an earlier build did unset
  ServerProcess server(before);
  server.start();
  std::vector<TestEvent> evs;
  for (int i = 0; i < 8; ++i) evs.push_back({"k" + std::to_string(i), "up-" + std::to_string(i), "1"});
  auto gs = game_server(server);
  gs->send(emit_frame("hunt", evs, 1));
  const auto offs = emitted_offs(gs->expect("emitted"));
  ASSERT_EQ(offs.size(), evs.size());
  gs.reset();
  server.terminate();
  ASSERT_EQ(server.wait_exit(15s), 0) << server.log();

  server.write_config(spec());  // topic_log unset
  server.start();
  EXPECT_FALSE(std::filesystem::exists(server.dir() + "/data/store/segments"));
  auto reader = game_server(server);
  const auto got = tail_all(*reader, "hunt", evs.size());
  EXPECT_EQ(got.size(), evs.size()) << "the events written before the upgrade";
  auto again = game_server(server);
  again->send(emit_frame("hunt", evs, 2));
  const std::string r = again->expect("emitted");
  EXPECT_EQ(emitted_offs(r), offs) << r;
  for (bool d : emitted_dups(r)) EXPECT_TRUE(d) << r;

  ServerProcess fresh(spec());
  fresh.start();
  auto c = game_server(fresh);
  c->send(emit_frame("hunt", evs, 1));
  EXPECT_EQ(emitted_offs(c->expect("emitted")).size(), evs.size());
  EXPECT_TRUE(std::filesystem::exists(fresh.dir() + "/data/store/segments"));
}

// Topics on the valkey store (issue 10: "event topics live there too"): a
// partition is a store channel of the tenant's hash-tagged partition, so emit,
// tail and retries behave as on the embedded store, and every key the topic
// wrote carries a {<tenant>.p<k>} tag (all of a partition's keys in one slot).
TEST(EventsOnValkey, EmitTailAndRetriesWorkAndEveryKeyCarriesAPartitionTag) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerSpec s = spec();
  s.store = "valkey";
  s.tenants_toml += "\n" + valkey_toml({redis.address()});
  ServerProcess server(s);
  server.start();

  auto gs = game_server(server);
  std::vector<TestEvent> evs;
  for (int i = 0; i < 40; ++i) {
    evs.push_back({"player-" + std::to_string(i % 8), "v-" + std::to_string(i),
                   "{\"i\":" + std::to_string(i) + "}"});
  }
  gs->send(emit_frame("hunt", evs, 1));
  const std::string emitted = gs->expect("emitted");
  const auto offs = emitted_offs(emitted);
  ASSERT_EQ(offs.size(), evs.size()) << emitted;
  for (bool d : emitted_dups(emitted)) EXPECT_FALSE(d) << emitted;

  gs->send(emit_frame("hunt", evs, 2));  // a producer's retry: same ids
  const std::string again = gs->expect("emitted");
  EXPECT_EQ(emitted_offs(again), offs) << again;
  for (bool d : emitted_dups(again)) EXPECT_TRUE(d) << again;

  auto reader = game_server(server, Wire::kUnix);
  const auto got = tail_all(*reader, "hunt", evs.size());
  EXPECT_EQ(got.size(), evs.size());
  expect_gap_free(got);
  std::set<std::string> ids;
  for (const auto& d : got) ids.insert(d.id);
  EXPECT_EQ(ids.size(), evs.size());

  size_t tagged = 0, keys = 0;
  std::string all = redis.command({"KEYS", "*"});
  for (size_t at = 0; at < all.size();) {
    const size_t nl = all.find('\n', at);
    const std::string key = all.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? all.size() : nl + 1;
    if (key.find("hunt") == std::string::npos) continue;
    ++keys;
    if (key.rfind("{demo.p", 0) == 0 && key.find('}') != std::string::npos) ++tagged;
  }
  EXPECT_GT(keys, 0u) << all;
  EXPECT_EQ(tagged, keys) << all;
}

}  // namespace
}  // namespace parley::testing
