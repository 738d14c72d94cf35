// Sequencing and dedupe under concurrency (PROTOCOL.md "Client ops" and "Server
// frames"): a channel's seqs start at 1 with no gaps; one connection's pubs are
// sequenced in the order sent; every member receives `msg` in seq order with no
// gaps; a repeated (user, id) is acked with its original seq and dup:true and is
// not delivered again. Publishers run on their own threads and connections, over
// WebSocket and raw TCP; members sit on several connections, so on several
// server loops.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/client.h"
#include "support/server_process.h"

namespace parley::testing {
namespace {

using Clock = std::chrono::steady_clock;

// 0 is "unlimited": no rate limit may interfere with what is measured here.
constexpr const char* kNoRateLimits = "publish_per_sec = 0\npublish_per_conn_sec = 0\n";

std::string ack_frame(int64_t rid, const std::string& ch, const std::string& id, int64_t seq,
                      bool dup) {
  return R"({"op":"ack","rid":)" + std::to_string(rid) + R"(,"ch":")" + ch + R"(","id":")" + id +
         R"(","seq":)" + std::to_string(seq) + R"(,"dup":)" + (dup ? "true" : "false") + "}";
}

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// What one connection received of the channel, in arrival order.
struct Stream {
  std::vector<std::string> msgs;
  std::vector<std::string> acks;
  std::vector<std::string> errors;
};

// Reads until `msgs` msg objects and `acks` ack objects arrived, the deadline
// passes or the connection closes.
void read_until(Client& c, size_t msgs, size_t acks, Stream& s, Clock::time_point deadline) {
  while (s.msgs.size() < msgs || s.acks.size() < acks) {
    auto o = c.next(left_until(deadline));
    if (!o) return;
    const std::string op = op_of(*o);
    if (op == "msg") s.msgs.push_back(*o);
    else if (op == "ack") s.acks.push_back(*o);
    else if (op == "error") s.errors.push_back(*o);
  }
}

// Empty when the stream's msgs are exactly seq 1..n in order; else the first problem.
std::string gap_free_problem(const Stream& s, size_t n) {
  for (size_t i = 0; i < s.msgs.size(); ++i) {
    const auto seq = json_int(s.msgs[i], "seq");
    if (seq != static_cast<int64_t>(i + 1)) {
      return "msg #" + std::to_string(i + 1) + " has seq " +
             (seq ? std::to_string(*seq) : "none") + ": " + s.msgs[i];
    }
  }
  if (s.msgs.size() != n) {
    return "received " + std::to_string(s.msgs.size()) + " msgs of " + std::to_string(n);
  }
  return "";
}

struct Wiring {
  int ws_publishers = 0;
  int tcp_publishers = 0;
  int ws_subscribers = 0;
  int tcp_subscribers = 0;
};

// One concurrent run: every publisher sends `per_publisher` pubs back to back
// from its own thread, all starting together; every connection then reads
// until it has seen every msg (and, for publishers, every ack).
struct ConcurrentRun {
  size_t total = 0;
  std::vector<std::string> publisher_users;
  std::vector<Stream> publishers;   // index k: publisher k
  std::vector<Stream> subscribers;
  // acked[k][i]: seq of publisher k's i-th pub (0: no ack).
  std::vector<std::vector<int64_t>> acked;
};

class OrderingTest : public SharedServerTest<OrderingTest> {
 public:
  static ServerSpec server_spec() {
    return spec_with_tenants(default_tenants_toml(kNoRateLimits),
                             "threads = 4");  // members spread over four loops
  }

 protected:
  static std::unique_ptr<Client> session(const std::string& user, const std::string& ch,
                                         Wire wire = Wire::kWebSocket) {
    auto c = ::parley::testing::connect_as(server_->port(wire), user, "demo", wire);
    EXPECT_EQ(op_of(c->join(ch)), "joined");
    return c;
  }

  static ConcurrentRun publish_concurrently(const std::string& ch, Wiring w, int per_publisher) {
    ConcurrentRun run;
    std::vector<std::unique_ptr<Client>> pubs, subs;
    for (int k = 0; k < w.ws_publishers + w.tcp_publishers; ++k) {
      run.publisher_users.push_back("pub" + std::to_string(k));
      pubs.push_back(session(run.publisher_users.back(), ch,
                             k < w.ws_publishers ? Wire::kWebSocket : Wire::kTcp));
    }
    for (int k = 0; k < w.ws_subscribers + w.tcp_subscribers; ++k) {
      subs.push_back(session("sub" + std::to_string(k), ch,
                             k < w.ws_subscribers ? Wire::kWebSocket : Wire::kTcp));
    }
    run.total = pubs.size() * per_publisher;
    run.publishers.resize(pubs.size());
    run.subscribers.resize(subs.size());
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (size_t k = 0; k < pubs.size(); ++k) {
      threads.emplace_back([&, k] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < per_publisher; ++i) {
          pubs[k]->send(pub_frame(ch, run.publisher_users[k] + "-" + std::to_string(i),
                                  R"({"p":)" + std::to_string(k) + R"(,"i":)" + std::to_string(i) + "}", i));
        }
        read_until(*pubs[k], run.total, per_publisher, run.publishers[k], deadline);
      });
    }
    for (size_t k = 0; k < subs.size(); ++k) {
      threads.emplace_back([&, k] { read_until(*subs[k], run.total, 0, run.subscribers[k], deadline); });
    }
    go.store(true);
    for (auto& t : threads) t.join();
    run.acked.assign(pubs.size(), std::vector<int64_t>(per_publisher, 0));
    for (size_t k = 0; k < pubs.size(); ++k) {
      for (const auto& a : run.publishers[k].acks) {
        const auto rid = json_int(a, "rid").value_or(-1);
        if (rid >= 0 && rid < per_publisher) run.acked[k][rid] = json_int(a, "seq").value_or(0);
      }
    }
    return run;
  }

  // Every ack is dup:false and their seqs are exactly 1..total.
  static void expect_unique_gap_free_acks(const ConcurrentRun& run) {
    std::set<int64_t> seqs;
    size_t acks = 0;
    for (const auto& p : run.publishers) {
      EXPECT_TRUE(p.errors.empty()) << (p.errors.empty() ? "" : p.errors.front());
      for (const auto& a : p.acks) {
        ++acks;
        EXPECT_EQ(json_bool(a, "dup"), false) << a;
        EXPECT_TRUE(seqs.insert(json_int(a, "seq").value_or(0)).second) << "seq acked twice: " << a;
      }
    }
    EXPECT_EQ(acks, run.total);
    ASSERT_FALSE(seqs.empty());
    EXPECT_EQ(*seqs.begin(), 1);
    EXPECT_EQ(*seqs.rbegin(), static_cast<int64_t>(run.total));
    EXPECT_EQ(seqs.size(), run.total);
  }

  // Publisher k's pubs were sequenced in the order it sent them.
  static void expect_send_order_kept(const ConcurrentRun& run) {
    for (size_t k = 0; k < run.acked.size(); ++k) {
      for (size_t i = 1; i < run.acked[k].size(); ++i) {
        ASSERT_LT(run.acked[k][i - 1], run.acked[k][i])
            << run.publisher_users[k] << "'s pub #" << i << " was sequenced before #" << i - 1;
      }
    }
  }

  // Every member (publishers included) got seq 1..total in order, each once,
  // and each msg is the one its ack announced.
  static void expect_every_member_got_everything_in_order(const ConcurrentRun& run) {
    std::map<int64_t, std::pair<std::string, std::string>> by_seq;  // seq -> (from, id)
    for (size_t k = 0; k < run.publishers.size(); ++k) {
      for (const auto& a : run.publishers[k].acks) {
        by_seq[json_int(a, "seq").value_or(0)] = {run.publisher_users[k], json_str(a, "id").value_or("")};
      }
    }
    auto check = [&](const Stream& s, const std::string& who) {
      EXPECT_EQ(gap_free_problem(s, run.total), "") << who;
      for (const auto& m : s.msgs) {
        const auto& [from, id] = by_seq[json_int(m, "seq").value_or(0)];
        if (json_str(m, "from") != from || json_str(m, "id") != id) {
          ADD_FAILURE() << who << " got " << m << ", acked as " << from << "/" << id;
          return;
        }
      }
    };
    for (size_t k = 0; k < run.publishers.size(); ++k) check(run.publishers[k], run.publisher_users[k]);
    for (size_t k = 0; k < run.subscribers.size(); ++k) check(run.subscribers[k], "sub" + std::to_string(k));
  }
};

constexpr int kPerPublisher = 200;

TEST_F(OrderingTest, ConcurrentPublishersGetUniqueGapFreeSeqs) {
  auto run = publish_concurrently("chat:unique", {.ws_publishers = 8}, kPerPublisher);
  expect_unique_gap_free_acks(run);
}

TEST_F(OrderingTest, EachConnectionsPubsAreSequencedInTheOrderSent) {
  auto run = publish_concurrently("chat:fifo", {.ws_publishers = 8}, kPerPublisher);
  expect_send_order_kept(run);
}

TEST_F(OrderingTest, EveryMemberOnEveryLoopReceivesEveryMessageOnceInSeqOrder) {
  auto run = publish_concurrently("chat:fanout", {.ws_publishers = 8, .ws_subscribers = 4},
                                  kPerPublisher);
  expect_every_member_got_everything_in_order(run);
}

// world: is not durable: its appends complete inline (memory store) and the
// shard acks and fans out within the publish's own task (Shard::publish_loaded),
// while other loops' publishes reach the shard by posting: the same guarantees.
TEST_F(OrderingTest, NotDurableChannelKeepsEveryGuaranteeAcrossLoops) {
  auto run = publish_concurrently("world:fanout", {.ws_publishers = 8, .ws_subscribers = 4},
                                  kPerPublisher);
  expect_unique_gap_free_acks(run);
  expect_send_order_kept(run);
  expect_every_member_got_everything_in_order(run);
}

TEST_F(OrderingTest, WebSocketAndTcpPublishersShareOneGapFreeSequence) {
  auto run = publish_concurrently(
      "chat:mixed",
      {.ws_publishers = 4, .tcp_publishers = 4, .ws_subscribers = 2, .tcp_subscribers = 2},
      kPerPublisher);
  expect_unique_gap_free_acks(run);
  expect_send_order_kept(run);
  expect_every_member_got_everything_in_order(run);
}

TEST_F(OrderingTest, RepeatedIdIsAckedWithItsOriginalSeqAsDupAndNotDeliveredAgain) {
  const std::string ch = "chat:dedupe-same";
  auto alice = session("alice", ch);
  auto bob = session("bob", ch);
  alice->send(pub_frame(ch, "m1", R"({"n":1})", 1));
  EXPECT_EQ(alice->expect("ack"), ack_frame(1, ch, "m1", 1, false));
  alice->send(pub_frame(ch, "m1", R"({"n":"again"})", 2));
  EXPECT_EQ(alice->expect("ack"), ack_frame(2, ch, "m1", 1, true));
  alice->send(pub_frame(ch, "m2", R"({"n":2})", 3));
  EXPECT_EQ(alice->expect("ack"), ack_frame(3, ch, "m2", 2, false));
  // Bob only: alice's expect("ack") above may already have passed her msgs.
  for (auto* c : {bob.get()}) {
    auto first = c->expect("msg");
    EXPECT_EQ(json_int(first, "seq"), 1) << first;
    EXPECT_EQ(json_raw(first, "body"), R"({"n":1})");
    auto second = c->expect("msg");  // the repeat was not delivered in between
    EXPECT_EQ(json_int(second, "seq"), 2) << second;
    EXPECT_EQ(json_str(second, "id"), "m2");
  }
}

TEST_F(OrderingTest, RepeatedIdFromAnotherConnectionOfTheSameUserIsADup) {
  const std::string ch = "chat:dedupe-reconnect";
  auto bob = session("bob", ch);
  {
    auto first = session("alice", ch);
    first->send(pub_frame(ch, "m1", R"({"n":1})", 1));
    EXPECT_EQ(first->expect("ack"), ack_frame(1, ch, "m1", 1, false));
  }  // the connection closes: alice reconnects
  auto again = session("alice", ch, Wire::kTcp);
  again->send(pub_frame(ch, "m1", R"({"n":1})", 1));
  EXPECT_EQ(again->expect("ack"), ack_frame(1, ch, "m1", 1, true));
  again->send(pub_frame(ch, "m2", R"({"n":2})", 2));
  EXPECT_EQ(again->expect("ack"), ack_frame(2, ch, "m2", 2, false));
  EXPECT_EQ(json_int(bob->expect("msg"), "seq"), 1);
  auto next = bob->expect("msg");
  EXPECT_EQ(json_int(next, "seq"), 2) << next;
  EXPECT_EQ(json_str(next, "id"), "m2");
}

TEST_F(OrderingTest, SameIdFromAnotherUserIsANewMessage) {
  const std::string ch = "chat:dedupe-users";
  auto alice = session("alice", ch);
  auto bob = session("bob", ch);
  alice->send(pub_frame(ch, "m1", R"({"from":"alice"})", 1));
  EXPECT_EQ(alice->expect("ack"), ack_frame(1, ch, "m1", 1, false));
  bob->send(pub_frame(ch, "m1", R"({"from":"bob"})", 1));
  // Bob only (alice's expect("ack") above may already have passed her msgs),
  // keeping the msgs that come before his ack: alice's may be out already.
  std::vector<std::string> msgs;
  for (;;) {
    auto o = bob->next();
    ASSERT_TRUE(o.has_value()) << "no ack";
    if (op_of(*o) == "msg") msgs.push_back(*o);
    if (op_of(*o) != "ack") continue;
    EXPECT_EQ(*o, ack_frame(1, ch, "m1", 2, false));
    break;
  }
  while (msgs.size() < 2) msgs.push_back(bob->expect("msg"));
  EXPECT_EQ(json_str(msgs[0], "from"), "alice") << msgs[0];
  EXPECT_EQ(json_int(msgs[1], "seq"), 2) << msgs[1];
  EXPECT_EQ(json_str(msgs[1], "from"), "bob");
  EXPECT_EQ(json_raw(msgs[1], "body"), R"({"from":"bob"})");
}

TEST_F(OrderingTest, ConcurrentRepeatsOfAnIdFromTwoConnectionsGetOneSeq) {
  const std::string ch = "chat:dedupe-race";
  constexpr int kIds = 100;
  auto observer = session("observer", ch);
  std::unique_ptr<Client> conns[2] = {session("alice", ch), session("alice", ch, Wire::kTcp)};
  Stream streams[2];
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kIds; ++i) {
        conns[k]->send(pub_frame(ch, "d" + std::to_string(i), R"({"i":)" + std::to_string(i) + "}", i));
      }
      read_until(*conns[k], 0, kIds, streams[k], deadline);
    });
  }
  go.store(true);
  for (auto& t : threads) t.join();

  std::map<std::string, std::vector<std::pair<int64_t, bool>>> by_id;  // id -> (seq, dup)
  for (const auto& s : streams) {
    EXPECT_EQ(s.acks.size(), static_cast<size_t>(kIds));
    for (const auto& a : s.acks) {
      by_id[json_str(a, "id").value_or("")].emplace_back(json_int(a, "seq").value_or(0),
                                                         json_bool(a, "dup").value_or(false));
    }
  }
  std::set<int64_t> first_seqs;
  for (const auto& [id, acks] : by_id) {
    ASSERT_EQ(acks.size(), 2u) << id;
    EXPECT_EQ(acks[0].first, acks[1].first) << id << " got two seqs";
    EXPECT_NE(acks[0].second, acks[1].second) << id << ": exactly one ack is dup:false";
    first_seqs.insert(acks[0].first);
  }
  EXPECT_EQ(first_seqs.size(), static_cast<size_t>(kIds));
  EXPECT_EQ(*first_seqs.rbegin(), kIds);

  // The observer got each id once: kIds msgs, then the next pub's seq follows.
  conns[0]->send(pub_frame(ch, "end", "null", 1000));
  EXPECT_EQ(json_int(conns[0]->expect("ack"), "seq"), kIds + 1);
  Stream seen;
  read_until(*observer, kIds + 1, 0, seen, Clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(gap_free_problem(seen, kIds + 1), "");
  EXPECT_EQ(json_str(seen.msgs.back(), "id"), "end");
}

}  // namespace
}  // namespace parley::testing
