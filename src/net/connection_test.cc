// net::Connection's write path against a scripted transport: what a send does
// when the socket is full, takes part of a frame, or fails.
#include "net/connection.h"

#include <gtest/gtest.h>
#include <sys/uio.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "runtime/loop_tail.h"

namespace parley::net {
namespace {

class RecordingHandler final : public ConnectionHandler {
 public:
  void on_frame(std::string_view, bool) override {}
  void on_closed() override { ++closed; }
  int closed = 0;
};

// A transport whose sendmsg takes at most `accept` bytes per call, fails with
// `fail_errno` when set, and records what went out.
class ScriptedConnection final : public Connection {
 public:
  ScriptedConnection(boost::asio::io_context& io, metrics::ThreadMetrics& m)
      : Connection(0, m), exec_(io.get_executor()) {}
  Transport transport() const override { return Transport::kTcp; }

  size_t accept = SIZE_MAX;
  int fail_errno = 0;
  int fail_times = -1;  // how many sends fail_errno fails (-1: all)
  std::string wire;
  int waits = 0;
  int aborts = 0;
  int writes = 0;  // write_some calls

  void writable() { on_writable(true); }

 private:
  void start_reading() override {}
  boost::asio::any_io_executor executor() override { return exec_; }
  boost::asio::any_io_executor exec_;
  size_t frame_header(const OutFrame& f, uint8_t* out) const override {
    out[0] = static_cast<uint8_t>('0' + f.bytes());  // one byte: enough to check framing
    return 1;
  }
  ssize_t write_some(const iovec* iov, int count) override {
    ++writes;
    if (fail_errno && fail_times != 0) {
      if (fail_times > 0) --fail_times;
      errno = fail_errno;
      return -1;
    }
    size_t room = accept;
    ssize_t n = 0;
    for (int i = 0; i < count && room > 0; ++i) {
      const size_t take = std::min(room, iov[i].iov_len);
      wire.append(static_cast<const char*>(iov[i].iov_base), take);
      room -= take;
      n += static_cast<ssize_t>(take);
    }
    if (n == 0 && count > 0) {
      errno = EAGAIN;
      return -1;
    }
    return n;
  }
  int native_fd() override { return -1; }
  void wait_writable() override { ++waits; }
  void close_transport(int, const std::string&) override {}
  void abort_transport() override { ++aborts; }
  void set_max_frame(size_t) override {}
  size_t read_buffer_bytes() const override { return 0; }
  void discard_input() override {}
};

class ConnectionWrite : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  metrics::ThreadMetrics metrics;
  std::shared_ptr<ScriptedConnection> conn = std::make_shared<ScriptedConnection>(io, metrics);
  std::shared_ptr<RecordingHandler> handler = std::make_shared<RecordingHandler>();
  void SetUp() override { conn->start(handler); }
};

TEST_F(ConnectionWrite, FramesGoOutInOrderWithTheirHeaders) {
  ASSERT_TRUE(conn->send(OutFrame("abc")));
  ASSERT_TRUE(conn->send(OutFrame("de")));
  EXPECT_EQ(conn->wire, "3abc2de");
  EXPECT_EQ(conn->queued_bytes(), 0u);
}

TEST_F(ConnectionWrite, AFullSocketKeepsTheRestQueuedUntilWritable) {
  conn->accept = 2;
  ASSERT_TRUE(conn->send(OutFrame("abcd")));
  EXPECT_EQ(conn->wire, "4a");
  EXPECT_EQ(conn->waits, 1);
  ASSERT_TRUE(conn->send(OutFrame("xy")));  // queued behind: no write while waiting
  EXPECT_EQ(conn->wire, "4a");
  EXPECT_EQ(conn->queued_bytes(), 6u);
  conn->accept = SIZE_MAX;
  conn->writable();
  EXPECT_EQ(conn->wire, "4abcd2xy");
  EXPECT_EQ(conn->queued_bytes(), 0u);
}

TEST_F(ConnectionWrite, AFailedSendFinishesFromTheLoopNotInsideSend) {
  // A caller walking its own tables (a heartbeat sweep, a fan-out) sends; the
  // handler's on_closed edits those tables, so it must not run inside send().
  conn->fail_errno = EPIPE;
  conn->send(OutFrame("ping"));
  EXPECT_EQ(handler->closed, 0);
  EXPECT_EQ(conn->aborts, 1);
  EXPECT_TRUE(conn->closing());
  EXPECT_TRUE(conn->send(OutFrame("more")));  // dropped quietly
  io.run();
  EXPECT_EQ(handler->closed, 1);
  EXPECT_EQ(conn->queued_bytes(), 0u);
}

TEST_F(ConnectionWrite, OverTheCapIsRefusedButTheFirstFrameAlwaysFits) {
  conn->set_queue_cap(4);
  conn->accept = 0;  // nothing leaves
  ASSERT_TRUE(conn->send(OutFrame("0123456789")));  // larger than the cap, queue empty
  EXPECT_FALSE(conn->send(OutFrame("x")));
  EXPECT_EQ(conn->queued_bytes(), 10u);
}

TEST_F(ConnectionWrite, GatheredFramesOfFewAndManySlicesGoOutWholeAndCounted) {
  // Up to OutFrame::kMaxParts slices a frame is written straight from the
  // caller's frame; more go through the queue. Both end up the same on the wire.
  auto buf = std::make_shared<const std::string>("hello,world");
  OutFrame few;
  few.add_static("[", 1);
  few.add_shared(buf, 0, 5);
  few.add_static("]", 1);
  ASSERT_TRUE(conn->send(std::move(few)));
  OutFrame many;
  for (int i = 0; i < 4; ++i) {
    many.add_static(i == 0 ? "[" : ",", 1);
    many.add_shared(buf, 6, 1);
  }
  many.add_static("]", 1);
  ASSERT_GT(many.parts().size(), OutFrame::kMaxParts);
  ASSERT_TRUE(conn->send(std::move(many)));
  EXPECT_EQ(conn->wire, "7[hello]9[w,w,w,w]");
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_EQ(metrics.frames_out.load(), 2u);
  EXPECT_EQ(metrics.bytes_out.load(), 16u);
}

TEST_F(ConnectionWrite, AHeartbeatGivesBackTheSlotsOfAnEmptyQueueOnly) {
  ASSERT_TRUE(conn->send_corked(OutFrame("ab")));
  conn->flush_corked();
  EXPECT_EQ(conn->wire, "2ab");
  EXPECT_GT(conn->queue_slots(), 0u);  // kept between frames
  conn->heartbeat();
  EXPECT_EQ(conn->queue_slots(), 0u);  // not through an idle period
  EXPECT_EQ(conn->unanswered_pings(), 1);

  conn->accept = 0;  // nothing leaves: the frame stays queued
  ASSERT_TRUE(conn->send(OutFrame("cd")));
  conn->heartbeat();
  EXPECT_GT(conn->queue_slots(), 0u);
  EXPECT_EQ(conn->queued_bytes(), 2u);
  conn->accept = SIZE_MAX;
  conn->writable();
  EXPECT_EQ(conn->wire, "2ab2cd");
}

TEST_F(ConnectionWrite, ACorkedFrameLeavesAtTheTasksEndOrInOneWriteWithTheNextSend) {
  {
    runtime::TailScope task;
    ASSERT_TRUE(conn->send_corked(OutFrame("ab")));
    ASSERT_TRUE(conn->send_corked(OutFrame("cd")));
    EXPECT_TRUE(conn->corked());
    EXPECT_EQ(conn->wire, "");
  }
  EXPECT_EQ(conn->wire, "2ab2cd");  // the task's flush point
  EXPECT_EQ(conn->writes, 1);
  EXPECT_FALSE(conn->corked());
  {
    runtime::TailScope task;
    ASSERT_TRUE(conn->send_corked(OutFrame("ef")));
    ASSERT_TRUE(conn->send(OutFrame("gh")));  // a delivery behind the ack
    EXPECT_EQ(conn->wire, "2ab2cd2ef2gh");
    EXPECT_EQ(conn->writes, 2) << "the ack and the delivery in one write";
    EXPECT_FALSE(conn->corked());
  }
  EXPECT_EQ(conn->writes, 2);  // nothing left for the flush point
}

TEST_F(ConnectionWrite, AnInterruptedSendIsRetried) {
  conn->fail_errno = EINTR;
  conn->fail_times = 1;
  ASSERT_TRUE(conn->send(OutFrame("abc")));
  EXPECT_EQ(conn->wire, "3abc");
  EXPECT_EQ(conn->queued_bytes(), 0u);
  EXPECT_FALSE(conn->closing());
}

}  // namespace
}  // namespace parley::net
