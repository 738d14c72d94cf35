// What the persister's tests share (persister_test.cc with PostgreSQL,
// persister_dynamodb_test.cc with DynamoDB): the tenants and [valkey] section of
// the servers and persisters, publishing a load and collecting its acks,
// waiting, the WAL's length.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing::persist_test {

using namespace std::chrono_literals;

constexpr int kPartitions = 4;

inline std::string tenants() {
  return default_tenants_toml(
      "publish_per_sec = 0\npublish_per_conn_sec = 0\n[tenants.demo.namespaces.chat]\nhistory = 20\n");
}

// The [valkey] section of the servers and the persister: few partitions, so
// that each test's rows spread over every one of them.
inline std::string valkey_section(const std::vector<std::string>& nodes, bool cluster = false) {
  return valkey_toml(nodes, cluster) + "partitions = " + std::to_string(kPartitions) + "\n";
}

inline bool wait_for(const std::function<bool()>& ok, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ok()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return ok();
}

// Publishes `n` messages round-robin over `chans` on one connection, 32 in
// flight; a pub answered `unavailable` is sent again with the same id (a
// duplicate then answers with the original seq). Returns the acked seqs.
inline std::map<std::string, std::set<int64_t>> publish(uint16_t port, const std::vector<std::string>& chans, int n,
                                                 const std::string& tag) {
  std::map<std::string, std::set<int64_t>> acked;
  auto c = connect_as(port, "alice");
  for (const auto& ch : chans) EXPECT_EQ(op_of(c->join(ch)), "joined") << ch;
  std::map<int64_t, std::pair<std::string, std::string>> waiting;  // rid -> (ch, id)
  int next = 0;
  int64_t rid = 1000;
  int retried = 0;  // pubs answered `unavailable` and sent again
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto send = [&](const std::string& ch, const std::string& id) {
    waiting[++rid] = {ch, id};
    c->send(pub_frame(ch, id, "{\"id\":\"" + id + "\"}", rid));
  };
  while ((next < n || !waiting.empty()) && std::chrono::steady_clock::now() < deadline) {
    while (next < n && waiting.size() < 32) {
      send(chans[static_cast<size_t>(next) % chans.size()], tag + "-" + std::to_string(next));
      ++next;
    }
    auto o = c->next(5s);
    if (!o) break;
    const std::string op = op_of(*o);
    if (op != "ack" && op != "error") continue;
    auto it = waiting.find(json_int(*o, "rid").value_or(-1));
    if (it == waiting.end()) continue;
    auto [ch, id] = it->second;
    waiting.erase(it);
    if (op == "ack") {
      acked[ch].insert(*json_int(*o, "seq"));
    } else if (json_str(*o, "code") != "unavailable") {
      ADD_FAILURE() << "pub refused: " << *o;
    } else {
      ++retried;
      std::this_thread::sleep_for(20ms);
      send(ch, id);
    }
  }
  EXPECT_EQ(next, n);
  EXPECT_TRUE(waiting.empty()) << waiting.size() << " pubs never answered";
  return acked;
}

inline size_t total(const std::map<std::string, std::set<int64_t>>& acked) {
  size_t n = 0;
  for (const auto& [ch, seqs] : acked) n += seqs.size();
  return n;
}

inline int64_t wal_entries(RedisServer& r) {
  int64_t n = 0;
  for (const char* t : {"demo", "other"}) {
    for (int k = 0; k < kPartitions; ++k) {
      const std::string v = r.command({"XLEN", "{" + std::string(t) + ".p" + std::to_string(k) + "}:w"});
      if (!v.empty() && v[0] != 'E') n += std::stoll(v);
    }
  }
  return n;
}

}  // namespace parley::testing::persist_test
