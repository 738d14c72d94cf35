// The session layer, Dragonfly-style: a real Gateway, Hub and event loops in
// this process, clients on a real Unix socket, and a ManualStore whose every
// call the test answers when it chooses. That reaches what tests of the whole
// binary cannot time: a leave or a disconnect while a join waits for the
// store, a store failure under a pub, a second `history` while the first is
// being read.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/local/stream_protocol.hpp>
#include <gtest/gtest.h>

#include "hub/hub.h"
#include "metrics/metrics.h"
#include "net/stream_connection.h"
#include "runtime/loop_group.h"
#include "session/gateway.h"
#include "tenant/tenant_registry.h"
#include "store/manual_store.h"
#include "support/client.h"

namespace parley::session {
namespace {

using namespace std::chrono_literals;
using boost::asio::local::stream_protocol;
using store::testing::ManualStore;
using store::testing::recovered;
using store::testing::StoreCall;
using testing::Client;
using testing::json_int;
using testing::json_str;
using testing::op_of;
using testing::Wire;

constexpr auto kWait = 5s;
constexpr const char* kApiKey = "session-test-key";

class ClientSessionTest : public ::testing::Test {
 protected:
  ClientSessionTest() : loops_(2), metrics_(2) {
    TenantConfig t;
    t.id = "demo";
    t.secret = "session-test-secret";
    t.api_key = kApiKey;
    t.default_namespace.presence = false;
    tenants_config_.emplace(t.id, t);
    tenants_ = std::make_unique<TenantRegistry>(tenants_config_);
    hub_ = std::make_unique<hub::Hub>(loops_, hub::Stores{&store_, &store_}, metrics_,
                                      hub::ShardOptions{});
    GatewayOptions go;
    go.drain_reconnect_ms = 700;
    gateway_ = std::make_unique<Gateway>(loops_, *tenants_, *hub_, hub::Stores{&store_, &store_},
                                         metrics_, go);
    path_ = (std::filesystem::temp_directory_path() /
             ("parley-session-test-" + std::to_string(getpid()) + ".sock"))
                .string();
    std::filesystem::remove(path_);
    acceptor_ = std::make_unique<stream_protocol::acceptor>(loops_.loop(0),
                                                             stream_protocol::endpoint(path_));
    loops_.start();
    gateway_->start();
    loops_.run_on(0, [this] { accept_next(); });
  }
  ~ClientSessionTest() override {
    clients_.clear();
    std::promise<void> closed;
    loops_.run_on(0, [&] {
      acceptor_->close();
      closed.set_value();
    });
    closed.get_future().wait_for(kWait);
    wait_until([&] { return gateway_->sessions() == 0; });
    loops_.stop();
    std::filesystem::remove(path_);
  }

  // Accepts on loop 0 and hands connections to the loops in turn, as the
  // server's listener does.
  void accept_next() {
    const unsigned loop = accepted_++ % loops_.size();
    acceptor_->async_accept(loops_.loop(loop), [this, loop](boost::system::error_code ec,
                                                            stream_protocol::socket s) {
      if (ec) return;
      if (gateway_->accepting()) {
        gateway_->adopt(std::make_shared<net::UnixConnection>(
            std::move(s), loop, metrics_.slot(loop), 64 * 1024, net::Transport::kUnix));
      }
      accept_next();
    });
  }

  // A client past hello (acting as the tenant's game server, user "server").
  Client& connect() {
    clients_.push_back(Client::connect(0, Wire::kUnix, "", path_));
    Client& c = *clients_.back();
    c.send(std::string(R"({"op":"hello","v":1,"rid":1,"api_key":")") + kApiKey + "\"}");
    EXPECT_EQ(op_of(c.next().value_or("")), "welcome");
    return c;
  }

  template <typename Pred>
  bool wait_until(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  // Joins `ch` with the channel load answered at `last_seq`.
  void join_loaded(Client& c, const std::string& ch, uint64_t last_seq, int rid = 2) {
    c.send(R"({"op":"join","ch":")" + ch + R"(","rid":)" + std::to_string(rid) + "}");
    auto rec = store_.next(StoreCall::kRecover);
    recovered(rec, last_seq);
    const std::string joined = c.next().value_or("");
    ASSERT_EQ(op_of(joined), "joined") << joined;
    EXPECT_EQ(json_int(joined, "seq"), static_cast<int64_t>(last_seq));
  }

  std::vector<std::string> members_of(const std::string& ch) {
    std::promise<std::vector<std::string>> got;
    hub_->members(&tenants_config_.at("demo"), ch, 1,
                  [&](std::vector<std::string> m) { got.set_value(std::move(m)); });
    auto f = got.get_future();
    EXPECT_EQ(f.wait_for(kWait), std::future_status::ready);
    return f.get();
  }

  runtime::LoopGroup loops_;
  metrics::Metrics metrics_;
  std::map<std::string, TenantConfig, std::less<>> tenants_config_;
  std::unique_ptr<TenantRegistry> tenants_;
  ManualStore store_;
  std::unique_ptr<hub::Hub> hub_;
  std::unique_ptr<Gateway> gateway_;
  std::string path_;
  std::unique_ptr<stream_protocol::acceptor> acceptor_;
  unsigned accepted_ = 0;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(ClientSessionTest, ALeaveWhileTheJoinWaitsForTheStoreIsAnsweredAfterJoinedAndRegistersNothing) {
  Client& c = connect();
  c.send(R"({"op":"join","ch":"chat:a","rid":2})");
  auto rec = store_.next(StoreCall::kRecover);
  c.send(R"({"op":"leave","ch":"chat:a","rid":3})");
  EXPECT_FALSE(c.next(200ms)) << "answered before the join's reply";

  recovered(rec, 4);
  const std::string joined = c.next().value_or("");
  EXPECT_EQ(op_of(joined), "joined") << joined;
  EXPECT_EQ(json_int(joined, "rid"), 2);
  const std::string left = c.next().value_or("");
  EXPECT_EQ(op_of(left), "left") << left;
  EXPECT_EQ(json_int(left, "rid"), 3);

  EXPECT_TRUE(members_of("chat:a").empty());
  c.send(R"({"op":"pub","ch":"chat:a","id":"x","body":{},"rid":4})");
  const std::string refused = c.next().value_or("");
  EXPECT_EQ(json_str(refused, "code"), "forbidden") << "the session still thinks it is joined";
  EXPECT_TRUE(store_.quiet_for(100ms)) << "a pub reached the store after the leave";
}

TEST_F(ClientSessionTest, ASecondJoinWhileTheFirstIsInFlightIsRefused) {
  Client& c = connect();
  c.send(R"({"op":"join","ch":"chat:b","rid":2})");
  auto rec = store_.next(StoreCall::kRecover);
  c.send(R"({"op":"join","ch":"chat:b","rid":3})");
  const std::string refused = c.next().value_or("");
  EXPECT_EQ(json_str(refused, "code"), "bad_request") << refused;
  EXPECT_EQ(json_int(refused, "rid"), 3);
  recovered(rec, 0);
  EXPECT_EQ(json_int(c.expect("joined"), "rid"), 2);
}

TEST_F(ClientSessionTest, AStoreFailureAnswersThePubUnavailableKeepsTheConnectionAndLeavesNoSeqGap) {
  Client& c = connect();
  join_loaded(c, "chat:c", 10);

  c.send(R"({"op":"pub","ch":"chat:c","id":"m1","body":{"n":1},"rid":5})");
  auto a11 = store_.next(StoreCall::kAppend);
  EXPECT_EQ(a11.append.msg.seq, 11u);
  a11.append_done(store::AppendOutcome{Error{ErrorCode::kUnavailable, "disk gone"}});
  const std::string err = c.next().value_or("");
  EXPECT_EQ(op_of(err), "error") << err;
  EXPECT_EQ(json_int(err, "rid"), 5);
  EXPECT_EQ(json_str(err, "code"), "unavailable");
  EXPECT_FALSE(c.closed());

  // The client retries with the same id: the channel is reloaded and the
  // message takes the seq after what the store holds.
  c.send(R"({"op":"pub","ch":"chat:c","id":"m1","body":{"n":1},"rid":6})");
  recovered(*std::make_unique<StoreCall>(store_.next(StoreCall::kRecover)), 10);
  auto again = store_.next(StoreCall::kAppend);
  EXPECT_EQ(again.append.msg.seq, 11u);
  again.append_done(store::Appended{11, false});
  // The member hears its own message and gets its ack, in either order.
  bool acked = false, delivered = false;
  for (int i = 0; i < 2; ++i) {
    const std::string o = c.next().value_or("");
    if (op_of(o) == "ack") {
      acked = true;
      EXPECT_EQ(json_int(o, "rid"), 6);
      EXPECT_EQ(json_int(o, "seq"), 11);
    } else if (op_of(o) == "msg") {
      delivered = true;
      EXPECT_EQ(json_int(o, "seq"), 11);
    } else {
      ADD_FAILURE() << o;
    }
  }
  EXPECT_TRUE(acked && delivered);
}

TEST_F(ClientSessionTest, HistoryRequestsRunOneAtATimeInTheOrderAsked) {
  Client& c = connect();
  c.send(R"({"op":"history","ch":"chat:d","after":0,"limit":10,"rid":7})");
  c.send(R"({"op":"history","ch":"chat:d","after":5,"limit":10,"rid":8})");
  auto first = store_.next(StoreCall::kReadAfter);
  EXPECT_EQ(first.bound, 0u);
  EXPECT_TRUE(store_.quiet_for(150ms)) << "the second history read before the first was answered";

  std::vector<store::StoredMessage> msgs;
  for (uint64_t s = 1; s <= 3; ++s) msgs.push_back({s, 1000, "u", "m" + std::to_string(s), "{}"});
  first.read_done(msgs);
  const std::string r7 = c.next().value_or("");
  EXPECT_EQ(op_of(r7), "history") << r7;
  EXPECT_EQ(json_int(r7, "rid"), 7);
  EXPECT_EQ(testing::msg_seqs(r7), testing::seq_range(1, 3));

  auto second = store_.next(StoreCall::kReadAfter);
  EXPECT_EQ(second.bound, 5u);
  second.read_done(Error{ErrorCode::kUnavailable, "io"});
  const std::string r8 = c.next().value_or("");
  EXPECT_EQ(json_int(r8, "rid"), 8);
  EXPECT_EQ(json_str(r8, "code"), "unavailable") << r8;
}

TEST_F(ClientSessionTest, ADisconnectWhileAJoinWaitsLeavesNothingBehind) {
  Client& c = connect();
  Client& other = connect();
  c.send(R"({"op":"join","ch":"chat:e","rid":2})");
  auto rec = store_.next(StoreCall::kRecover);
  c.close();
  ASSERT_TRUE(wait_until([&] { return gateway_->sessions() == 1; }));
  recovered(rec, 0);
  EXPECT_TRUE(members_of("chat:e").empty());
  EXPECT_EQ(tenants_->find("demo")->connections.load(), 1u);

  // The channel works on for the others.
  other.send(R"({"op":"join","ch":"chat:e","rid":2})");
  EXPECT_EQ(op_of(other.next().value_or("")), "joined");
}

TEST_F(ClientSessionTest, DrainingAnswersNewWorkUnavailableWithTheReconnectDelay) {
  Client& c = connect();
  join_loaded(c, "chat:f", 0);
  gateway_->begin_drain();
  c.send(R"({"op":"pub","ch":"chat:f","id":"y","body":{},"rid":9})");
  const std::string err = c.next().value_or("");
  EXPECT_EQ(json_str(err, "code"), "unavailable") << err;
  EXPECT_EQ(json_int(err, "retry_ms"), 700);
  EXPECT_TRUE(store_.quiet_for(100ms)) << "a pub reached the store while draining";
  c.send(R"({"op":"ping","rid":10})");
  EXPECT_EQ(op_of(c.next().value_or("")), "pong") << "reads stop only at drain's second step";
}

}  // namespace
}  // namespace parley::session
