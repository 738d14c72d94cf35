// An event's partition as an independent client computes it from PROTOCOL.md
// alone ("fnv1a_64(key) mod partitions", FNV-1a over the key's UTF-8 bytes with
// offset basis 14695981039346656037 and prime 1099511628211): every emitted
// event's `offs`, every tail and every consumer-group delivery puts each key in
// that partition, over WebSocket, TCP and the HTTP API, on the embedded and the
// valkey store (issue 22). The hash below is written from the spec's text, not
// taken from the server's code.
//
// Also: a data dir written by a server from before (tests/data/legacy_topic)
// keeps each key in its old partition, so no key's events are reordered, while
// a topic created now follows the spec (docs/operations.md "Event partitions of
// old topics").
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "integration/event_client.h"
#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

constexpr uint32_t kPartitions = 16;

// PROTOCOL.md's FNV-1a 64, from its constants.
uint64_t spec_fnv1a_64(const std::string& key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
int64_t spec_partition(const std::string& key, uint32_t partitions = kPartitions) {
  return static_cast<int64_t>(spec_fnv1a_64(key) % partitions);
}

TEST(SpecHash, MatchesTheProtocolsVector) {
  EXPECT_EQ(spec_fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(spec_partition("player-1"), 2);  // the issue's example (the old server said 4)
}

constexpr const char* kTopics = R"(
[tenants.demo.topics.spec]
partitions = 16
)";

std::string keys_json(const std::vector<std::string>& keys, const std::string& id_prefix) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ',';
    out += R"({"key":")" + keys[i] + R"(","type":"t","id":")" + id_prefix + std::to_string(i) +
           R"(","body":{"i":)" + std::to_string(i) + "}}";
  }
  return out + "]";
}

// The `offs` of an emit answer name, for each key, the spec's partition.
void expect_spec_offs(const std::string& answer, const std::vector<std::string>& keys,
                      const std::string& via) {
  const auto offs = emitted_offs(answer);
  ASSERT_EQ(offs.size(), keys.size()) << via << ": " << answer;
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(offs[i].first, spec_partition(keys[i])) << via << ": " << keys[i];
  }
}

// Emits over WebSocket, TCP and HTTP; a group member (WebSocket), a tail of
// every partition (TCP) and a tail of one partition (WebSocket) each find every
// event in the partition the spec gives its key.
void check_partitions_follow_the_spec(ServerProcess& server) {
  std::vector<std::string> keys;
  for (int i = 0; i < 24; ++i) keys.push_back("player-" + std::to_string(i));
  const std::string one_key = "player-1";
  const int64_t one_p = spec_partition(one_key);

  auto member = connect_as(server.http_port(), "consumer");
  member->send(R"({"op":"consume","rid":1,"topic":"spec","group":"g"})");
  ASSERT_FALSE(member->expect("assigned").empty());
  auto tail_all = game_server(server, Wire::kTcp);
  tail_all->send(R"({"op":"tail","rid":1,"topic":"spec","from":"earliest"})");
  ASSERT_FALSE(tail_all->expect("tailing").empty());
  auto tail_one = connect_as(server.http_port(), "watcher");
  tail_one->send(R"({"op":"tail","rid":1,"topic":"spec","p":)" + std::to_string(one_p) +
                 R"(,"from":"earliest"})");
  ASSERT_FALSE(tail_one->expect("tailing").empty());

  // WebSocket, with a player's token.
  auto ws = connect_as(server.http_port(), "producer");
  ws->send(R"({"op":"emit","rid":1,"topic":"spec","events":)" + keys_json(keys, "ws-") + "}");
  expect_spec_offs(ws->expect("emitted"), keys, "WebSocket");
  // TCP, a game server with the api key.
  auto tcp = game_server(server, Wire::kTcp);
  tcp->send(R"({"op":"emit","rid":1,"topic":"spec","events":)" + keys_json(keys, "tcp-") + "}");
  expect_spec_offs(tcp->expect("emitted"), keys, "TCP");
  // The HTTP API.
  const HttpResult r = http_request(server.http_port(), "POST", "/v1/events/spec",
                                    R"({"events":)" + keys_json(keys, "http-") + "}", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  expect_spec_offs(r.body, keys, "HTTP");

  const size_t total = 3 * keys.size();
  size_t of_one = 0;
  for (const auto& k : keys) of_one += spec_partition(k) == one_p ? 3 : 0;
  ASSERT_GT(of_one, 0u);
  for (auto [who, c, want] : {std::tuple{"group member", member.get(), total},
                              std::tuple{"tail of every partition", tail_all.get(), total},
                              std::tuple{"tail of one partition", tail_one.get(), of_one}}) {
    const auto got = read_events(*c, want);
    EXPECT_EQ(got.size(), want) << who;
    expect_gap_free(got, who);
    std::set<std::string> ids;
    for (const auto& d : got) {
      EXPECT_EQ(d.p, spec_partition(d.key)) << who << ": " << d.key << " (" << d.id << ")";
      ids.insert(d.id);
      if (std::string(who) == "group member") EXPECT_EQ(d.group, "g");
    }
    EXPECT_EQ(ids.size(), want) << who;
  }
}

TEST(PartitionContract, EmbeddedStorePartitionsByTheSpecsHash) {
  ServerProcess server(spec_with_tenants(default_tenants_toml() + kTopics));
  server.start();
  check_partitions_follow_the_spec(server);
}

TEST(PartitionContract, ValkeyStorePartitionsByTheSpecsHash) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerSpec s = spec_with_tenants(default_tenants_toml() + kTopics);
  s.store = "valkey";
  s.tenants_toml += "\n" + valkey_toml({redis.address()});
  ServerProcess server(s);
  server.start();
  check_partitions_follow_the_spec(server);
}

// tests/data/legacy_topic/make.sh: topic demo/old as a server before the spec's
// hash wrote it, 2 events for each of player-0..player-11.
constexpr const char* kLegacyTopics = R"(
[tenants.demo.topics.old]
partitions = 16

[tenants.demo.topics.spec]
partitions = 16
)";

// The partition of each key's events in `topic`, read by a tail from earliest;
// a gtest failure when a key's events are in more than one.
std::map<std::string, int64_t> partitions_of_keys(ServerProcess& server, const std::string& topic,
                                                  size_t want) {
  auto c = game_server(server);
  c->send(R"({"op":"tail","rid":1,"topic":")" + topic + R"(","from":"earliest"})");
  EXPECT_FALSE(c->expect("tailing").empty());
  const auto got = read_events(*c, want);
  EXPECT_EQ(got.size(), want) << topic;
  expect_gap_free(got, topic);
  std::map<std::string, int64_t> where;
  for (const auto& d : got) {
    auto [it, fresh] = where.emplace(d.key, d.p);
    EXPECT_EQ(it->second, d.p) << topic << ": " << d.key << " is in partitions " << it->second
                               << " and " << d.p;
  }
  return where;
}

// Emits one event per key of `where` into `topic`; each must land in the
// partition `where` names.
void expect_emits_land(ServerProcess& server, const std::string& topic,
                       const std::map<std::string, int64_t>& where, const std::string& round) {
  std::vector<std::string> keys;
  for (const auto& [k, p] : where) keys.push_back(k);
  const HttpResult r = http_request(server.http_port(), "POST", "/v1/events/" + topic,
                                    R"({"events":)" + keys_json(keys, round + "-") + "}", kDemoApiKey);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto offs = emitted_offs(r.body);
  ASSERT_EQ(offs.size(), keys.size()) << r.body;
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(offs[i].first, where.at(keys[i])) << topic << " " << round << ": " << keys[i];
  }
}

TEST(PartitionContract, ATopicWrittenBeforeTheSpecsHashKeepsEachKeyInItsPartition) {
  ServerProcess server(spec_with_tenants(default_tenants_toml() + kLegacyTopics));
  const std::string tar = "tar -C " + server.dir() + " -xzf " PARLEY_SOURCE_DIR
                          "/tests/data/legacy_topic/data.tar.gz";
  ASSERT_EQ(std::system(tar.c_str()), 0) << tar;
  server.start();

  const auto old_where = partitions_of_keys(server, "old", 24);
  ASSERT_EQ(old_where.size(), 12u);
  size_t moved_by_spec = 0;
  for (const auto& [k, p] : old_where) moved_by_spec += p != spec_partition(k);
  ASSERT_GT(moved_by_spec, 0u) << "the fixture must hold keys the spec's hash would move";
  expect_emits_land(server, "old", old_where, "r3");

  // A topic new to this data dir follows the spec.
  std::map<std::string, int64_t> spec_where;
  for (const auto& [k, p] : old_where) spec_where[k] = spec_partition(k);
  expect_emits_land(server, "spec", spec_where, "n1");

  // Both choices are recorded: after a restart each topic keeps its own.
  server.terminate();
  ASSERT_EQ(server.wait_exit(10s), 0) << server.log();
  server.restart();
  expect_emits_land(server, "old", old_where, "r4");
  expect_emits_land(server, "spec", spec_where, "n2");
  EXPECT_EQ(partitions_of_keys(server, "old", 48), old_where);
  EXPECT_EQ(partitions_of_keys(server, "spec", 24), spec_where);
  EXPECT_NE(server.log().find("created before partitions followed PROTOCOL.md"), std::string::npos)
      << server.log();
}

}  // namespace
}  // namespace parley::testing
