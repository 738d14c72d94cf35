// Helpers for event-stream tests (PROTOCOL.md "Event streams and
// leaderboards"): a game server's connection over TCP or the Unix socket with
// the tenant's api_key, emit frames, and the events a connection receives.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {

// A game server: hello with the api key over TCP (or the Unix socket).
inline std::unique_ptr<Client> game_server(const ServerProcess& s, Wire wire = Wire::kTcp,
                                           const std::string& api_key = kDemoApiKey) {
  auto c = wire == Wire::kUnix ? Client::connect(0, Wire::kUnix, "", s.unix_path())
                               : Client::connect(s.tcp_port(), Wire::kTcp);
  c->send(R"({"op":"hello","v":1,"rid":0,"api_key":")" + api_key + R"("})");
  const std::string w = c->expect("welcome");
  EXPECT_EQ(json_str(w, "user"), "server") << w;
  return c;
}

struct TestEvent {
  std::string key;
  std::string id;    // empty: none
  std::string body;  // raw JSON
  std::string type = "t";
};

inline std::string emit_frame(const std::string& topic, const std::vector<TestEvent>& evs,
                              int64_t rid) {
  std::string f = R"({"op":"emit","rid":)" + std::to_string(rid) + R"(,"topic":")" + topic +
                  R"(","events":[)";
  for (size_t i = 0; i < evs.size(); ++i) {
    if (i) f += ',';
    f += R"({"key":")" + evs[i].key + R"(","type":")" + evs[i].type + R"(","body":)" + evs[i].body;
    if (!evs[i].id.empty()) f += R"(,"id":")" + evs[i].id + '"';
    f += '}';
  }
  return f + "]}";
}

// [[p,off],...] and [dup,...] of an `emitted` reply.
inline std::vector<std::pair<int64_t, int64_t>> emitted_offs(const std::string& obj) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& pair : json_array_items(json_raw(obj, "offs").value_or(""))) {
    auto items = json_array_items(pair);
    if (items.size() != 2) return {};
    out.emplace_back(std::stoll(items[0]), std::stoll(items[1]));
  }
  return out;
}
inline std::vector<bool> emitted_dups(const std::string& obj) {
  std::vector<bool> out;
  for (const auto& d : json_array_items(json_raw(obj, "dup").value_or(""))) out.push_back(d == "true");
  return out;
}

// One delivered event: its partition and what the frame said.
struct Delivered {
  int64_t p = 0;
  int64_t off = 0;
  std::string key, id, from, group, body;
};

// Appends each event of an `events` frame to `out`.
inline void collect_events(const std::string& frame, std::vector<Delivered>& out) {
  const int64_t p = json_int(frame, "p").value_or(-1);
  const std::string group = json_str(frame, "group").value_or("");
  for (const auto& e : json_array_items(json_raw(frame, "evs").value_or(""))) {
    out.push_back(Delivered{p, json_int(e, "off").value_or(-1), json_str(e, "key").value_or(""),
                            json_str(e, "id").value_or(""), json_str(e, "from").value_or(""), group,
                            json_raw(e, "body").value_or("")});
  }
}

// Reads `events` frames until `want` events came or 20 s passed.
inline std::vector<Delivered> read_events(Client& c, size_t want) {
  using namespace std::chrono_literals;
  std::vector<Delivered> got;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
    auto f = c.next(1s);
    if (f && op_of(*f) == "events") collect_events(*f, got);
  }
  return got;
}

// Per partition: offsets 1, 2, 3, ... with no gap and no repeat.
inline void expect_gap_free(const std::vector<Delivered>& got, const std::string& who = "") {
  std::map<int64_t, int64_t> last;
  for (const auto& d : got) {
    ASSERT_EQ(d.off, last[d.p] + 1) << who << (who.empty() ? "" : ": ") << "partition " << d.p
                                    << " jumped from " << last[d.p];
    last[d.p] = d.off;
  }
}

}  // namespace parley::testing
