// Several `parley serve` processes on one Valkey serving the same channels
// (issue 10, cross-node fan-out): the store's script owns seq and dedupe, every
// node delivers every committed message in store order with no gap and no
// duplicate, whichever node it was published on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <map>
#include <set>
#include <thread>

#include "support/client.h"
#include "support/redis_server.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using namespace std::chrono_literals;

ServerSpec node_spec(const std::vector<std::string>& nodes, const std::string& extra = "",
                     bool cluster = false) {
  ServerSpec spec = spec_with_tenants(default_tenants_toml(
      "publish_per_sec = 0\npublish_per_conn_sec = 0\n"));
  spec.store = "valkey";
  spec.tenants_toml += "\n" + valkey_toml(nodes, cluster) + extra;
  return spec;
}

// Publishes `n` messages from `c` (ids <prefix><i>), one in flight at a time,
// and returns the acks' seqs (0 for an error answer).
std::vector<int64_t> publish_n(Client& c, const std::string& ch, const std::string& prefix, int n,
                               std::vector<std::string>* errors = nullptr) {
  std::vector<int64_t> seqs;
  for (int i = 1; i <= n; ++i) {
    c.send(pub_frame(ch, prefix + std::to_string(i), "{\"n\":" + std::to_string(i) + "}", i));
    const std::string a = ack_or_error(c);
    if (op_of(a) == "ack") {
      seqs.push_back(json_int(a, "seq").value_or(-1));
    } else {
      seqs.push_back(0);
      if (errors) errors->push_back(a);
    }
  }
  return seqs;
}

TEST(Fanout, TwoNodesPublishingIntoOneChannelAllGetAcksWithDistinctSeqs) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerProcess a(node_spec({redis.address()}));
  ServerProcess b(node_spec({redis.address()}));
  a.start();
  b.start();
  auto alice = connect_as(a.http_port(), "alice");
  auto bob = connect_as(b.http_port(), "bob");
  ASSERT_EQ(op_of(alice->join("chat:both")), "joined");
  ASSERT_EQ(op_of(bob->join("chat:both")), "joined");
  constexpr int kN = 100;
  std::vector<int64_t> sa, sb;
  std::vector<std::string> ea, eb;
  std::thread ta([&] { sa = publish_n(*alice, "chat:both", "a", kN, &ea); });
  std::thread tb([&] { sb = publish_n(*bob, "chat:both", "b", kN, &eb); });
  ta.join();
  tb.join();
  EXPECT_TRUE(ea.empty()) << ea.front();
  EXPECT_TRUE(eb.empty()) << eb.front();
  std::set<int64_t> all(sa.begin(), sa.end());
  all.insert(sb.begin(), sb.end());
  ASSERT_EQ(all.size(), size_t{2 * kN});
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), 2 * kN);
  // One publisher's seqs rise in send order.
  EXPECT_TRUE(std::is_sorted(sa.begin(), sa.end()));
  EXPECT_TRUE(std::is_sorted(sb.begin(), sb.end()));
  // A retry through the other node is a duplicate with the original seq: the
  // dedupe window is the script's, shared by every node.
  auto alice_on_b = connect_as(b.http_port(), "alice");
  ASSERT_EQ(op_of(alice_on_b->join("chat:both")), "joined");
  alice_on_b->send(pub_frame("chat:both", "a7", "{\"n\":7}", 1));
  const std::string dup = alice_on_b->expect("ack");
  EXPECT_EQ(json_int(dup, "seq"), sa[6]) << dup;
  EXPECT_EQ(json_bool(dup, "dup"), true) << dup;
}

// Collects the msg frames of `ch` a client receives until it has `n` of them
// (or `timeout` passes): their seqs and ids in arrival order.
struct Received {
  std::vector<int64_t> seqs;
  std::vector<std::string> ids;
};
Received receive_msgs(Client& c, size_t n, std::chrono::milliseconds timeout = 20s) {
  Received r;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (r.seqs.size() < n && std::chrono::steady_clock::now() < end) {
    auto o = c.next(500ms);
    if (!o || op_of(*o) != "msg") continue;
    r.seqs.push_back(json_int(*o, "seq").value_or(-1));
    r.ids.push_back(json_str(*o, "id").value_or(""));
  }
  return r;
}

// Two publishers and one listener on each of two nodes, all in one channel,
// publishing concurrently: both listeners get seqs 1..N in one order.
void expect_one_order(ServerProcess& a, ServerProcess& b, const std::string& ch, int per_publisher) {
  std::vector<std::unique_ptr<Client>> pubs, subs;
  for (int i = 0; i < 4; ++i) {
    auto& node = i % 2 == 0 ? a : b;
    pubs.push_back(connect_as(node.http_port(), "p" + std::to_string(i)));
    ASSERT_EQ(op_of(pubs.back()->join(ch)), "joined");
  }
  for (int i = 0; i < 2; ++i) {
    subs.push_back(connect_as((i == 0 ? a : b).http_port(), "s" + std::to_string(i)));
    ASSERT_EQ(op_of(subs.back()->join(ch)), "joined");
  }
  std::vector<std::thread> threads;
  std::vector<std::vector<std::string>> errors(pubs.size());
  for (size_t i = 0; i < pubs.size(); ++i) {
    threads.emplace_back([&, i] {
      publish_n(*pubs[i], ch, "p" + std::to_string(i) + "-", per_publisher, &errors[i]);
    });
  }
  const size_t total = pubs.size() * per_publisher;
  Received r0, r1;
  std::thread l0([&] { r0 = receive_msgs(*subs[0], total); });
  std::thread l1([&] { r1 = receive_msgs(*subs[1], total); });
  for (auto& t : threads) t.join();
  l0.join();
  l1.join();
  for (const auto& e : errors) EXPECT_TRUE(e.empty()) << e.front();
  const auto want = seq_range(1, static_cast<int64_t>(total));
  EXPECT_EQ(r0.seqs, want);
  EXPECT_EQ(r1.seqs, want);
  // One order: the same message at each seq on both nodes.
  EXPECT_EQ(r0.ids, r1.ids);
  // Nothing more comes (no duplicate after the last).
  EXPECT_EQ(subs[0]->expect("msg", 300ms), "");
  EXPECT_EQ(subs[1]->expect("msg", 300ms), "");
  // Each node heard of commits through the store's pushes.
  for (auto* n : {&a, &b}) {
    const std::string metrics = http_request(n->http_port(), "GET", "/metrics").body;
    EXPECT_EQ(metrics.find("parley_fanout_received_total 0\n"), std::string::npos);
    EXPECT_NE(metrics.find("parley_fanout_received_total"), std::string::npos);
  }
}

TEST(Fanout, TwoNodesDeliverOneOrderWithNoGapsAndNoDuplicates) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerProcess a(node_spec({redis.address()}));
  ServerProcess b(node_spec({redis.address()}));
  a.start();
  b.start();
  expect_one_order(a, b, "chat:mix", 150);
}

TEST(Fanout, TwoNodesOnAThreeMasterClusterDeliverOneOrder) {
  RedisCluster& cluster = shared_redis_cluster();
  ASSERT_TRUE(cluster.ok()) << cluster.why();
  cluster.flush_all();
  ServerProcess a(node_spec(cluster.addresses(), "", true));
  ServerProcess b(node_spec(cluster.addresses(), "", true));
  a.start();
  b.start();
  // Channels over several partitions (and so masters), one after another.
  for (const char* ch : {"chat:c1", "chat:c2", "chat:c3"}) expect_one_order(a, b, ch, 40);
  // The feed channel a script publishes to is in the slot of the keys it writes.
  for (int p = 0; p < 64; ++p) {
    const std::string tag = "{demo.p" + std::to_string(p) + "}";
    EXPECT_EQ(cluster.node(0).command({"CLUSTER", "KEYSLOT", tag + ":f"}),
              cluster.node(0).command({"CLUSTER", "KEYSLOT", tag + ":s:chat:c1"}));
  }
}

TEST(Fanout, Kill9OfANodeUnderLoadLosesNothingAcknowledged) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  ServerProcess a(node_spec({redis.address()}));
  ServerProcess b(node_spec({redis.address()}));
  a.start();
  b.start();
  auto listener_b = connect_as(b.http_port(), "lb");
  ASSERT_EQ(op_of(listener_b->join("chat:k")), "joined");
  auto pub_a = connect_as(a.http_port(), "pa");
  auto pub_b = connect_as(b.http_port(), "pb");
  auto listener_a = connect_as(a.http_port(), "la");
  ASSERT_EQ(op_of(pub_a->join("chat:k")), "joined");
  ASSERT_EQ(op_of(pub_b->join("chat:k")), "joined");
  ASSERT_EQ(op_of(listener_a->join("chat:k")), "joined");

  // Publishers on both nodes, several pubs in flight each; node A dies mid-way.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> acked;  // ids acknowledged (seq known)
  std::map<std::string, int64_t> seq_of;
  auto pump = [&](Client& c, const std::string& prefix, int& sent) {
    while (!stop.load() && sent < 400) {
      for (int k = 0; k < 4; ++k, ++sent) c.send(pub_frame("chat:k", prefix + std::to_string(sent), "{}", sent));
      for (int k = 0; k < 4; ++k) {
        auto o = c.next(2s);
        if (!o) return;  // the node died
        if (op_of(*o) != "ack") continue;
        std::lock_guard lock(mu);
        acked.insert(*json_str(*o, "id"));
        seq_of[*json_str(*o, "id")] = *json_int(*o, "seq");
      }
    }
  };
  int sent_a = 0, sent_b = 0;
  std::thread ta([&] { pump(*pub_a, "a", sent_a); });
  std::thread tb([&] { pump(*pub_b, "b", sent_b); });
  // What listener A saw before the kill.
  std::vector<int64_t> seen_a;
  while (seen_a.size() < 100) {
    auto o = listener_a->next(5s);
    ASSERT_TRUE(o.has_value());
    if (op_of(*o) == "msg") seen_a.push_back(*json_int(*o, "seq"));
  }
  a.kill9();
  ta.join();
  stop = true;
  tb.join();
  ASSERT_EQ(seen_a, seq_range(1, 100));

  // A's publisher reconnects to B and resends every pub it has no ack for: each
  // gets its seq (a new one, or dup:true with the original).
  auto again = connect_as(b.http_port(), "pa");
  ASSERT_EQ(op_of(again->join("chat:k")), "joined");
  for (int i = 0; i < sent_a; ++i) {
    const std::string id = "a" + std::to_string(i);
    if (acked.contains(id)) continue;
    again->send(pub_frame("chat:k", id, "{}", i));
    const std::string ack = ack_or_error(*again);
    ASSERT_EQ(op_of(ack), "ack") << ack;
    acked.insert(id);
    seq_of[id] = *json_int(ack, "seq");
  }
  // A's listener resumes on B with `since`: with what it had, it holds every seq.
  auto resumed = connect_as(b.http_port(), "la");
  const std::string joined = resumed->join("chat:k", seen_a.back());
  ASSERT_EQ(op_of(joined), "joined") << joined;
  EXPECT_EQ(json_bool(joined, "recovered"), true) << joined;
  const int64_t latest = *json_int(joined, "seq");
  std::vector<int64_t> all = seen_a;
  Received rest = receive_msgs(*resumed, static_cast<size_t>(latest - seen_a.back()), 10s);
  all.insert(all.end(), rest.seqs.begin(), rest.seqs.end());
  EXPECT_EQ(all, seq_range(1, latest));
  // Every acknowledged message is in the channel, at the seq its ack named.
  const auto history = http_history_all(b.http_port(), "chat:k");
  std::map<std::string, int64_t> stored;
  for (const auto& m : history) stored[*json_str(m, "id")] = *json_int(m, "seq");
  for (const auto& id : acked) EXPECT_EQ(stored[id], seq_of[id]) << id;
  EXPECT_EQ(stored.size(), history.size());  // no id twice
  // B's listener saw one gap-free order throughout.
  Received on_b = receive_msgs(*listener_b, static_cast<size_t>(latest), 10s);
  EXPECT_EQ(on_b.seqs, seq_range(1, latest));
}

TEST(Fanout, ValkeyDownAnswersUnavailableOnBothNodesAndFanOutResumesByItself) {
  char tmpl[] = "/tmp/parley-fanout-down-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  RedisServer redis(std::string(tmpl) + "/redis", RedisServer::Options{false, "always"});
  ASSERT_TRUE(redis.ok()) << redis.why();
  ServerProcess a(node_spec({redis.address()}, "command_timeout_ms = 500\n"));
  ServerProcess b(node_spec({redis.address()}, "command_timeout_ms = 500\n"));
  a.start();
  b.start();
  auto pub = connect_as(a.http_port(), "alice");
  auto sub = connect_as(b.http_port(), "bob");
  ASSERT_EQ(op_of(pub->join("chat:d")), "joined");
  ASSERT_EQ(op_of(sub->join("chat:d")), "joined");
  pub->send(pub_frame("chat:d", "m1", "{}", 1));
  ASSERT_EQ(json_int(pub->expect("ack"), "seq"), 1);
  ASSERT_EQ(json_int(sub->expect("msg"), "seq"), 1);

  redis.kill9();
  pub->send(pub_frame("chat:d", "m2", "{}", 2));
  const std::string err = ack_or_error(*pub);
  EXPECT_EQ(json_str(err, "code"), "unavailable") << err;
  EXPECT_GT(json_int(err, "retry_ms").value_or(0), 0) << err;
  EXPECT_FALSE(pub->closed());
  EXPECT_FALSE(sub->closed());

  ASSERT_TRUE(redis.restart());
  // The client retries until the store takes it; the other node's member gets it
  // through the re-made subscription (or the fill after it), in order.
  std::string ack;
  for (int i = 0; i < 60; ++i) {
    pub->send(pub_frame("chat:d", "m2", "{}", 3));
    ack = ack_or_error(*pub);
    if (op_of(ack) == "ack") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(op_of(ack), "ack") << ack;
  EXPECT_EQ(json_int(ack, "seq"), 2);
  pub->send(pub_frame("chat:d", "m3", "{}", 4));
  EXPECT_EQ(json_int(ack_or_error(*pub), "seq"), 3);
  Received r = receive_msgs(*sub, 2, 10s);
  EXPECT_EQ(r.seqs, seq_range(2, 3));
  std::filesystem::remove_all(tmpl);
}

// The next presence frame (others skipped), "" on timeout.
std::string next_presence(Client& c, std::chrono::milliseconds timeout = 5s) {
  return c.expect("presence", timeout);
}

bool has_member(const std::string& joined, const std::string& user) {
  auto members = json_raw(joined, "members").value_or("");
  return members.find("\"" + user + "\"") != std::string::npos;
}

TEST(Fanout, PresenceCrossesNodesAndADeadNodesMembersExpire) {
  RedisServer& redis = shared_redis();
  ASSERT_TRUE(redis.ok()) << redis.why();
  ASSERT_EQ(redis.command({"FLUSHALL"}), "OK");
  // A short presence TTL (valkey.presence_ttl_ms): a dead node's users leave
  // within seconds, not the default 15-20 s.
  ServerProcess a(node_spec({redis.address()}, "presence_ttl_ms = 3000\n"));
  ServerProcess b(node_spec({redis.address()}, "presence_ttl_ms = 3000\n"));
  a.start();
  b.start();
  auto alice = connect_as(a.http_port(), "alice");
  ASSERT_EQ(op_of(alice->join("chat:p")), "joined");
  // A join on the other node lists alice, and alice hears of bob.
  auto bob = connect_as(b.http_port(), "bob");
  const std::string joined = bob->join("chat:p");
  EXPECT_TRUE(has_member(joined, "alice")) << joined;
  EXPECT_TRUE(has_member(joined, "bob")) << joined;
  std::string p = next_presence(*alice);
  EXPECT_EQ(json_raw(p, "join"), "[\"bob\"]") << p;
  // GET /v1/presence on either node lists both.
  for (auto* n : {&a, &b}) {
    auto r = http_request(n->http_port(), "GET", "/v1/presence?ch=chat:p", "", kDemoApiKey);
    EXPECT_NE(r.body.find("alice"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("bob"), std::string::npos) << r.body;
  }
  // A second connection of bob's on node A: nobody hears of bob again, and his
  // leave on B is not a leave while A still has him.
  auto bob2 = connect_as(a.http_port(), "bob");
  ASSERT_EQ(op_of(bob2->join("chat:p")), "joined");
  bob->close();
  EXPECT_EQ(next_presence(*alice, 1s), "");
  bob2->close();
  p = next_presence(*alice);
  EXPECT_EQ(json_raw(p, "leave"), "[\"bob\"]") << p;

  // carol on A, then A dies: B's members see carol (and alice) leave once A's
  // entries expire (presence_ttl_ms after A's last refresh, which came at most
  // a third of it before the kill: 3-4 s, plus B's next reconcile, 1 s).
  auto dave = connect_as(b.http_port(), "dave");
  const std::string dj = dave->join("chat:p");
  EXPECT_TRUE(has_member(dj, "alice")) << dj;
  auto carol = connect_as(a.http_port(), "carol");
  ASSERT_EQ(op_of(carol->join("chat:p")), "joined");
  // B may still be telling of bob's leave (A's note can reach B after dave's
  // join, under load): dave's first join news is carol's.
  p = next_presence(*dave);
  for (int i = 0; i < 3 && !p.empty() && json_raw(p, "leave") == "[\"bob\"]"; ++i) p = next_presence(*dave);
  EXPECT_EQ(json_raw(p, "join"), "[\"carol\"]") << p;
  a.kill9();
  const auto killed = std::chrono::steady_clock::now();
  std::set<std::string> left;
  const auto end = killed + 30s;
  while (left.size() < 2 && std::chrono::steady_clock::now() < end) {
    const std::string f = next_presence(*dave, 1s);
    if (f.empty()) continue;
    for (const auto& u : json_array_items(json_raw(f, "leave").value_or("[]"))) left.insert(u);
  }
  EXPECT_EQ(left, (std::set<std::string>{"\"alice\"", "\"carol\""}));
  // Well below the default TTL's 15 s: the key took effect.
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
}

}  // namespace
}  // namespace parley::testing
