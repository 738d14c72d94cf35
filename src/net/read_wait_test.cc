// net::ReadWait over a real loopback TCP pair: it fires when bytes arrive,
// stays quiet while the socket is empty, re-arms without a syscall, holds its
// owner only while armed, and reports a closed socket.
#include "net/read_wait.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>

namespace parley::net {
namespace {

using boost::asio::ip::tcp;
using namespace std::chrono_literals;

struct Pair {
  explicit Pair(boost::asio::io_context& io) : server(io), client(io) {
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    server.non_blocking(true);
  }
  // Reads until EAGAIN: the edge-triggered contract of ReadWait.
  size_t drain() {
    char buf[4096];
    size_t total = 0;
    for (;;) {
      const ssize_t n = ::recv(server.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) return total;
      total += static_cast<size_t>(n);
    }
  }
  tcp::socket server;
  tcp::socket client;
};

struct Counter {
  int calls = 0;
  int failures = 0;
  static void on(void* arg, bool ok) {
    auto* c = static_cast<Counter*>(arg);
    ++c->calls;
    if (!ok) ++c->failures;
  }
};

// A loopback pair with an armed wait whose first (fresh-descriptor) edge has
// been consumed: the socket is empty and the wait is armed again.
class ReadWaitTest : public ::testing::Test {
 protected:
  ReadWaitTest() : p(io) {
    // A fresh descriptor may report at once (nothing has consumed its first edge).
    wait.arm(p.server, owner, &Counter::on, &c);
    io.run_for(50ms);
    io.restart();
    p.drain();
    if (!wait.armed()) wait.arm(p.server, owner, &Counter::on, &c);
  }
  boost::asio::io_context io;
  Pair p;
  ReadWait wait;
  Counter c;
  std::shared_ptr<int> owner = std::make_shared<int>(0);
};

TEST_F(ReadWaitTest, FiresOnEachArrivalAndStaysQuietWhileTheSocketIsEmpty) {
  const int before = c.calls;
  for (int round = 0; round < 3; ++round) {
    if (!wait.armed()) wait.arm(p.server, owner, &Counter::on, &c);
    io.run_for(30ms);  // empty socket: no call
    io.restart();
    EXPECT_EQ(c.calls, before + round) << "round " << round;
    EXPECT_EQ(owner.use_count(), 2) << "held while armed";
    boost::asio::write(p.client, boost::asio::buffer("hello", 5));
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (c.calls == before + round && std::chrono::steady_clock::now() < deadline) {
      io.run_for(5ms);
      io.restart();
    }
    ASSERT_EQ(c.calls, before + round + 1) << "round " << round;
    EXPECT_EQ(owner.use_count(), 1) << "released once it fired";
    EXPECT_EQ(p.drain(), 5u);
  }
  EXPECT_EQ(c.failures, 0);
}

TEST_F(ReadWaitTest, AnEdgeThatArrivedWhileNotArmedCompletesTheNextWait) {
  boost::asio::write(p.client, boost::asio::buffer("a", 1));
  while (wait.armed()) io.run_one_for(1s);
  io.restart();
  const int fired = c.calls;
  // Bytes arrive while nobody waits; the reactor sees their edge first.
  boost::asio::write(p.client, boost::asio::buffer("b", 1));
  io.run_for(20ms);
  io.restart();
  wait.arm(p.server, owner, &Counter::on, &c);
  io.run_for(50ms);
  EXPECT_EQ(c.calls, fired + 1);
  EXPECT_EQ(p.drain(), 2u);
}

TEST_F(ReadWaitTest, ClosingTheSocketCompletesTheWaitWithAFailure) {
  const int before = c.calls;
  p.server.close();
  io.run_for(50ms);
  EXPECT_EQ(c.calls, before + 1);
  EXPECT_EQ(c.failures, 1);
  EXPECT_EQ(owner.use_count(), 1);
}

TEST(ReadWaitOwnerTest, AnOwnerHeldOnlyByItsQueuedWaitIsFreedWithTheIoContext) {
  // As a connection: the owner holds its sockets and the wait, and only the
  // queued wait holds the owner. Destroying the io_context destroys the wait
  // without calling it, which frees the owner (and its sockets) then.
  struct Owner {
    explicit Owner(boost::asio::io_context& io) : p(io) {}
    Pair p;
    ReadWait wait;
  };
  std::weak_ptr<Owner> watch;
  Counter c;
  {
    boost::asio::io_context io;
    auto owner = std::make_shared<Owner>(io);
    watch = owner;
    Owner* raw = owner.get();
    raw->wait.arm(raw->p.server, owner, &Counter::on, &c);
    io.run_for(20ms);  // a fresh descriptor may fire at once
    io.restart();
    if (!raw->wait.armed()) {
      raw->p.drain();
      raw->wait.arm(raw->p.server, owner, &Counter::on, &c);
    }
    owner.reset();
    ASSERT_TRUE(raw->wait.armed());
    ASSERT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(c.failures, 0);  // destroyed, not called
}

}  // namespace
}  // namespace parley::net
