// When the tick batcher sends (tick_batcher.h): msgs at the end of the loop
// iteration that delivered them, one frame per member for all of them; a
// channel holding a `state` waits for its tick; a drain yields to the loop
// between slices. A real loop (runtime::LoopGroup of one), fake subscribers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "hub/tick_batcher.h"
#include "metrics/metrics.h"
#include "protocol/encoder.h"
#include "protocol/msgpack_encoder.h"
#include "runtime/loop_group.h"
#include "runtime/loop_tail.h"

namespace parley::hub {

struct TickBatcherTestPeer {
  // Events of a tick_ms = 0 channel that leave in one drain, as a tick's would.
  static void deliver_together(TickBatcher& fan, const std::string& channel_key,
                               std::vector<ChannelEvent> events) {
    auto it = fan.channels_.find(channel_key);
    ASSERT_NE(it, fan.channels_.end());
    for (auto& ev : events) it->second.pending.push_back(std::move(ev));
    it->second.tick_no = 0;
    fan.send_now(&*it);
  }
};

namespace {

using namespace std::chrono_literals;

// Counts frames and the events in them; touched on the loop only, read by the
// test after a round trip through the loop.
class CountingSub final : public Subscriber,
                          public runtime::CorkedWriter,
                          public std::enable_shared_from_this<CountingSub> {
 public:
  explicit CountingSub(uint64_t conn, std::vector<std::string>* log = nullptr,
                       protocol::Encoding enc = protocol::Encoding::kJson)
      : conn_(conn), user_("u" + std::to_string(conn)), log_(log), enc_(enc) {}
  protocol::Encoding encoding() const override { return enc_; }
  bool state_deltas() const override { return deltas; }
  bool state_delta_batch() const override { return batch; }
  uint64_t conn_id() const override { return conn_; }
  const std::string& user_id() const override { return user_; }
  unsigned loop() const override { return 0; }
  bool gone() const override { return false; }
  void send(net::OutFrame&& frame) override {
    std::string text(reinterpret_cast<const char*>(frame.prefix()), frame.prefix_len());
    for (const auto& p : frame.parts()) text.append(static_cast<const char*>(p.data()), p.size());
    EXPECT_EQ(text.size(), frame.bytes());
    last = text;
    peer_encoded = frame.peer_encoded;
    first_part = frame.parts().empty() ? nullptr : frame.parts()[0].data();
    ++frames;
    corked_ = false;  // the frame carries what was corked, as a connection's send does
    if (log_) log_->push_back("send " + std::to_string(conn_));
  }
  // Holds a corked frame (an ack), as net::Connection::send_corked leaves one:
  // written at the loop task's flush point.
  void cork(boost::asio::io_context& loop) {
    if (corked_) return;
    corked_ = true;
    runtime::TailScope::cork(weak_from_this(), loop.get_executor());
  }
  bool corked() const override { return corked_; }
  void write_corked() override {
    if (!corked_) return;
    corked_ = false;
    if (log_) log_->push_back("flush " + std::to_string(conn_));
  }
  int frames = 0;
  bool deltas = false;  // asked for state deltas (hello caps)
  bool batch = false;   // and for batched ones
  std::string last;
  bool peer_encoded = false;
  const void* first_part = nullptr;  // where the frame's first slice points

 private:
  uint64_t conn_;
  std::string user_;
  std::vector<std::string>* log_;
  protocol::Encoding enc_;
  bool corked_ = false;
};

ChannelEvent msg(const std::string& text) {
  return ChannelEvent{std::make_shared<const std::string>(text), 0, {}, {}, 0};
}

class TickBatcherTest : public ::testing::Test {
 protected:
  TickBatcherTest() : loops_(1), metrics_(1), fan_(0, loops_.loop(0), metrics_.slot(0)) {
    loops_.start();
  }
  ~TickBatcherTest() override { loops_.stop(); }

  // Runs fn on the loop and waits for it.
  template <typename Fn>
  void on_loop(Fn fn) {
    std::promise<void> ran;
    loops_.run_on(0, [&] {
      fn();
      ran.set_value();
    });
    ASSERT_EQ(ran.get_future().wait_for(5s), std::future_status::ready);
  }

  // Lets what the loop posted to itself run: a task posted from here may
  // overtake what a task posts to its own loop before it returns, never a
  // second time.
  void settle() {
    for (int i = 0; i < 3; ++i) on_loop([] {});
  }

  std::vector<std::shared_ptr<CountingSub>> members(const std::string& ch, uint32_t tick_ms,
                                                    int n, uint64_t first_conn) {
    std::vector<std::shared_ptr<CountingSub>> subs;
    on_loop([&] {
      for (int i = 0; i < n; ++i) {
        subs.push_back(std::make_shared<CountingSub>(first_conn + i));
        fan_.add_member(ch, tick_ms, subs.back());
      }
    });
    return subs;
  }

  runtime::LoopGroup loops_;
  metrics::Metrics metrics_;
  TickBatcher fan_;
};

TEST_F(TickBatcherTest, MessagesOfOneIterationLeaveAtItsEndInOneFrame) {
  auto subs = members("c", 1000, 3, 1);
  int during = -1;
  on_loop([&] {
    fan_.deliver("c", msg("{\"n\":1}"));
    fan_.deliver("c", msg("{\"n\":2}"));
    during = subs[0]->frames;  // not sent from inside deliver
  });
  settle();  // the drain posted behind the task above has run
  EXPECT_EQ(during, 0);
  for (auto& s : subs) {
    EXPECT_EQ(s->frames, 1);
    EXPECT_EQ(s->last, "[{\"n\":1},{\"n\":2}]");
  }
}

TEST_F(TickBatcherTest, AChannelThatSentWithinTheTickWaitsForTheNextOne) {
  constexpr uint32_t kTick = 300;
  auto subs = members("b", kTick, 2, 1);
  on_loop([&] { fan_.deliver("b", msg("{\"n\":1}")); });
  settle();
  int frames = 0;
  on_loop([&] { frames = subs[0]->frames; });
  ASSERT_EQ(frames, 1) << "a quiet channel sends at once";
  const auto t0 = std::chrono::steady_clock::now();
  on_loop([&] { fan_.deliver("b", msg("{\"n\":2}")); });
  settle();
  on_loop([&] { frames = subs[0]->frames; });
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(kTick / 3)) {
    EXPECT_EQ(frames, 1) << "a busy channel sent before its tick";
  }
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (frames < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    on_loop([&] { frames = subs[0]->frames; });
  }
  EXPECT_EQ(frames, 2);
}

TEST_F(TickBatcherTest, AChannelHoldingAStateSendsEverythingAtTheTick) {
  constexpr uint32_t kTick = 200;
  auto subs = members("w", kTick, 2, 1);
  ChannelEvent st{std::make_shared<const std::string>("{\"s\":1}"), 1, {}, "1\0k", 0};
  ChannelEvent st2{std::make_shared<const std::string>("{\"s\":2}"), 1, {}, "1\0k", 0};
  const auto t0 = std::chrono::steady_clock::now();
  on_loop([&] {
    fan_.deliver("w", std::move(st));
    fan_.deliver("w", msg("{\"m\":1}"));
    fan_.deliver("w", std::move(st2));  // latest wins, in the first one's place
  });
  settle();
  int frames = 0;
  on_loop([&] { frames = subs[1]->frames; });
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(kTick / 2)) {
    EXPECT_EQ(frames, 0) << "sent before the tick";  // unless a tick fell right here
  }
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (frames == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    on_loop([&] { frames = subs[1]->frames; });
  }
  on_loop([&] {
    EXPECT_EQ(subs[1]->frames, 1);
    EXPECT_EQ(subs[1]->last, "[{\"s\":2},{\"m\":1}]");
    EXPECT_EQ(subs[0]->last, "[{\"m\":1}]") << "its own state is not echoed";
  });
}

TEST_F(TickBatcherTest, ADrainYieldsToTheLoopBetweenSlices) {
  // Two channels, each more members than a slice: the first channel's frames go
  // out, then what was queued on the loop meanwhile runs, then the second's.
  const int n = static_cast<int>(TickBatcher::kSliceDeliveries) + 10;
  auto a = members("a", 1000, n, 1);
  auto b = members("b", 1000, n, 100000);
  int a_sent = -1, b_sent = -1;
  on_loop([&] {
    fan_.deliver("a", msg("{\"a\":1}"));
    fan_.deliver("b", msg("{\"b\":1}"));
    // Queued behind the drain: stands for an ack posted to this loop.
    boost::asio::post(loops_.loop(0), [&] {
      a_sent = a.back()->frames;
      b_sent = b.back()->frames;
    });
  });
  settle();
  EXPECT_EQ(a_sent, 1);
  EXPECT_EQ(b_sent, 0) << "the second slice ran before the queued task";
  EXPECT_EQ(b.back()->frames, 1);
}

TEST_F(TickBatcherTest, WhatArrivesBetweenSlicesIsTakenByTheNextSlice) {
  // The hook stands for the shard taking a store completion (Shard's
  // constructor) that arrived while a fan-out is being sliced: the next slice
  // takes it before assembling anything, so its ack (a cork) is written by that
  // slice (corked frames go first: the test below), not by a drain queued
  // behind it; its channel's event joins the ready channels in order.
  const int n = static_cast<int>(TickBatcher::kSliceDeliveries) + 10;
  std::vector<std::string> log;
  auto a = members("a", 1000, n, 1);
  auto b = members("b", 1000, n, 100000);
  auto c = members("c", 1000, 1, 200000);
  auto publisher = std::make_shared<CountingSub>(9, &log);
  bool completion = false;
  int hook_runs = 0;
  fan_.set_before_drain([&] {
    ++hook_runs;
    if (!completion) return;
    completion = false;
    fan_.deliver("c", msg("{\"c\":1}"));
    publisher->cork(loops_.loop(0));
  });
  int b_before = -1, b_after = -1;
  std::vector<std::string> log_after;
  on_loop([&] {
    fan_.deliver("a", msg("{\"a\":1}"));
    fan_.deliver("b", msg("{\"b\":1}"));
    // Runs after the first slice (a's members), before the second.
    boost::asio::post(loops_.loop(0), [&] {
      b_before = b.back()->frames;
      completion = true;
      // Queued before the second slice posts the third: sees the second's work.
      boost::asio::post(loops_.loop(0), [&] {
        b_after = b.back()->frames;
        log_after = log;
      });
    });
  });
  settle();
  settle();
  EXPECT_EQ(b_before, 0);
  EXPECT_EQ(b_after, 1);
  EXPECT_EQ(log_after, (std::vector<std::string>{"flush 9"}))
      << "the ack waited for a drain queued behind the slice that took it";
  on_loop([&] { EXPECT_EQ(c[0]->frames, 1); });
  EXPECT_GE(hook_runs, 2);
  on_loop([&] { fan_.set_before_drain(nullptr); });
}

TEST_F(TickBatcherTest, CorkedSubscribersAreWrittenFirstWithTheirFrameOfTheDrain) {
  // An ack is corked in the connection (net::Connection::send_corked); the
  // drain writes it before any other delivery: through the subscriber's own
  // frame when it has one in this drain (one write for both), else alone.
  std::vector<std::string> log;
  std::vector<std::shared_ptr<CountingSub>> subs;
  auto other = std::make_shared<CountingSub>(9, &log);
  on_loop([&] {
    for (uint64_t c = 1; c <= 3; ++c) {
      subs.push_back(std::make_shared<CountingSub>(c, &log));
      fan_.add_member("c", 1000, subs.back());
    }
  });
  on_loop([&] {
    fan_.deliver("c", msg("{\"n\":1}"));
    subs[2]->cork(loops_.loop(0));
    other->cork(loops_.loop(0));  // not a member: its corked frame goes alone
    subs[2]->cork(loops_.loop(0));  // listed once
  });
  settle();
  on_loop([&] {
    EXPECT_EQ(log, (std::vector<std::string>{"send 3", "flush 9", "send 1", "send 2"}));
    for (auto& s : subs) EXPECT_EQ(s->last, "[{\"n\":1}]");
  });
  // A cork with nothing delivered still gets its drain.
  on_loop([&] {
    log.clear();
    other->cork(loops_.loop(0));
  });
  settle();
  on_loop([&] { EXPECT_EQ(log, (std::vector<std::string>{"flush 9"})); });
}

// PROTOCOL.md "Binary encoding": members of one channel may mix encodings.
// A MessagePack member's frame is the MessagePack of the JSON member's frame,
// minus what it is excluded from, with $bin bodies as bin.
TEST_F(TickBatcherTest, MessagePackMembersGetTheSameEventsInTheirEncoding) {
  using protocol::Encoding;
  std::vector<std::shared_ptr<CountingSub>> subs;
  on_loop([&] {
    subs.push_back(std::make_shared<CountingSub>(1, nullptr, Encoding::kJson));
    subs.push_back(std::make_shared<CountingSub>(2, nullptr, Encoding::kMsgpack));
    subs.push_back(std::make_shared<CountingSub>(3, nullptr, Encoding::kMsgpack));
    subs.push_back(std::make_shared<CountingSub>(4, nullptr, Encoding::kMsgpack));
    for (auto& s : subs) fan_.add_member("mix", 1000, s);
  });
  const std::string a = R"({"op":"msg","seq":1,"body":{"t":"hi","n":1.5}})";
  const std::string b = R"({"op":"msg","seq":2,"body":{"blob":{"$bin":"AAE="}}})";
  on_loop([&] {
    fan_.deliver("mix", msg(a));
    ChannelEvent from3 = msg(b);
    from3.exclude_conn = 3;  // as a state is not echoed to its sender
    fan_.deliver("mix", std::move(from3));
  });
  settle();
  auto msgpack_of = [](const std::string& json) {
    std::string mp;
    EXPECT_TRUE(protocol::append_msgpack_from_json(mp, json));
    return mp;
  };
  on_loop([&] {
    EXPECT_EQ(subs[0]->last, "[" + a + "," + b + "]");
    EXPECT_FALSE(subs[0]->peer_encoded);
    EXPECT_EQ(subs[1]->last, msgpack_of("[" + a + "," + b + "]"));
    EXPECT_TRUE(subs[1]->peer_encoded);
    EXPECT_EQ(subs[2]->last, msgpack_of("[" + a + "]"));
    EXPECT_EQ(subs[3]->last, subs[1]->last);
    // Encoded once for the tick: every MessagePack member's slices point into
    // one buffer, as the JSON member's point into the JSON one.
    EXPECT_EQ(subs[3]->first_part, subs[1]->first_part);
    EXPECT_EQ(subs[2]->first_part, subs[1]->first_part);
    EXPECT_NE(subs[0]->first_part, subs[1]->first_part);
    for (auto& s : subs) EXPECT_EQ(s->frames, 1);
  });
}

// PROTOCOL.md "State deltas", at the batcher: a delta member gets the full
// state with its sid first, then `sd` frames of what changed; a member without
// the capability keeps full states; a member that (re)joined gets the body
// whole again. tick_ms = 0: each state goes out at once, in a drain of its own.
ChannelEvent state_of(uint64_t conn, const std::string& body) {
  auto json = std::make_shared<std::string>();
  protocol::encode_state(*json, "w:1", "u" + std::to_string(conn), "pos", body);
  ChannelEvent ev{json, conn, {}, std::to_string(conn) + std::string(1, '\0') + "pos", 0};
  ev.delta = true;
  ev.body_len = static_cast<uint32_t>(body.size());
  return ev;
}

// The frame without its "ts" (the wall clock).
std::string untimed(const std::string& frame) {
  std::string s = frame;
  for (size_t at; (at = s.find("\"ts\":")) != std::string::npos;) {
    size_t end = s.find(',', at);
    s.erase(at, end + 1 - at);
  }
  return s;
}

TEST_F(TickBatcherTest, DeltaMembersGetWhatChangedAndTheFullBodyWhenTheyMayLackTheBase) {
  auto subs = members("w", 0, 3, 1);  // 1 sends; 2 plain; 3 asks for deltas
  on_loop([&] { subs[2]->deltas = true; });
  on_loop([&] { fan_.deliver("w", state_of(1, R"({"x":1,"y":2})")); });
  EXPECT_EQ(untimed(subs[1]->last), R"([{"op":"state","ch":"w:1","from":"u1","key":"pos","body":{"x":1,"y":2}}])");
  EXPECT_EQ(untimed(subs[2]->last),
            R"([{"op":"state","sid":1,"ch":"w:1","from":"u1","key":"pos","body":{"x":1,"y":2}}])");
  on_loop([&] { fan_.deliver("w", state_of(1, R"({"x":2,"y":2})")); });
  EXPECT_EQ(untimed(subs[1]->last), R"([{"op":"state","ch":"w:1","from":"u1","key":"pos","body":{"x":2,"y":2}}])");
  EXPECT_EQ(untimed(subs[2]->last), R"([{"op":"sd","sid":1,"body":{"x":2}}])");

  // A new delta member has no base: whole; the one that stayed: a delta.
  std::shared_ptr<CountingSub> late;
  on_loop([&] {
    late = std::make_shared<CountingSub>(4);
    late->deltas = true;
    fan_.add_member("w", 0, late);
    fan_.deliver("w", state_of(1, R"({"x":3})"));
  });
  EXPECT_EQ(untimed(late->last), R"([{"op":"state","sid":1,"ch":"w:1","from":"u1","key":"pos","body":{"x":3}}])");
  EXPECT_EQ(untimed(subs[2]->last), R"([{"op":"sd","sid":1,"body":{"x":3},"unset":["y"]}])");

  // Leaving and joining again: whole.
  on_loop([&] {
    fan_.remove_member("w", 3);
    fan_.add_member("w", 0, subs[2]);
    fan_.deliver("w", state_of(1, R"({"x":4})"));
  });
  EXPECT_EQ(untimed(subs[2]->last), R"([{"op":"state","sid":1,"ch":"w:1","from":"u1","key":"pos","body":{"x":4}}])");
  EXPECT_EQ(untimed(late->last), R"([{"op":"sd","sid":1,"body":{"x":4}}])");

  // A body that is not an object: plain, no sid; the next one whole.
  on_loop([&] { fan_.deliver("w", state_of(1, "5")); });
  EXPECT_EQ(untimed(late->last), R"([{"op":"state","ch":"w:1","from":"u1","key":"pos","body":5}])");
  on_loop([&] { fan_.deliver("w", state_of(1, R"({"x":6})")); });
  EXPECT_EQ(untimed(late->last), R"([{"op":"state","sid":1,"ch":"w:1","from":"u1","key":"pos","body":{"x":6}}])");
  EXPECT_EQ(subs[0]->frames, 0) << "a state is not sent back to its sender";
}

// PROTOCOL.md "Batched state deltas": a batch member gets the same states, its
// deltas of one drain as the entries of one `sds` (consecutive entries of its
// list share one even when other events lie between them in the batch), whole
// states and msgs where they stand; in MessagePack the same, converted.
TEST_F(TickBatcherTest, BatchMembersGetADrainsDeltasAsOneFrameOfEntries) {
  auto subs = members("w", 0, 4, 1);  // 1 and 2 send; 3 asks for sd; 4 for sds
  std::shared_ptr<CountingSub> mp;
  on_loop([&] {
    subs[2]->deltas = true;
    subs[3]->deltas = subs[3]->batch = true;
    mp = std::make_shared<CountingSub>(5, nullptr, protocol::Encoding::kMsgpack);
    mp->deltas = mp->batch = true;
    fan_.add_member("w", 0, mp);
  });
  auto two = [&](const std::string& a, const std::string& b) {
    on_loop([&] {
      // One drain with both (tick_ms = 0 sends each at once: deliver both first).
      TickBatcherTestPeer::deliver_together(fan_, "w", {state_of(1, a), msg(R"({"m":1})"), state_of(2, b)});
    });
  };
  two(R"({"x":1,"y":2})", R"({"x":5})");
  EXPECT_EQ(untimed(subs[3]->last),
            R"([{"op":"state","sid":1,"ch":"w:1","from":"u1","key":"pos","body":{"x":1,"y":2}},{"m":1},)"
            R"({"op":"state","sid":2,"ch":"w:1","from":"u2","key":"pos","body":{"x":5}}])");
  two(R"({"x":2,"y":2})", R"({"z":1})");
  EXPECT_EQ(untimed(subs[2]->last), R"([{"op":"sd","sid":1,"body":{"x":2}},{"m":1},)"
                                    R"({"op":"sd","sid":2,"body":{"z":1},"unset":["x"]}])");
  EXPECT_EQ(untimed(subs[3]->last), R"([{"op":"sds","d":[1,{"x":2}]},{"m":1},{"op":"sds","d":[2,[null,{"z":1},["x"]]]}])");
  std::string want;
  ASSERT_TRUE(protocol::append_msgpack_from_json(want, subs[3]->last));
  EXPECT_EQ(mp->last, want) << "MessagePack: the same frame converted";
  EXPECT_TRUE(mp->peer_encoded);

  // Two deltas next to each other: one sds; its `{}` is a delivery all the same.
  on_loop([&] {
    TickBatcherTestPeer::deliver_together(fan_, "w", {state_of(1, R"({"x":3,"y":2})"), state_of(2, R"({"z":1})")});
  });
  EXPECT_EQ(untimed(subs[3]->last), R"([{"op":"sds","d":[1,{"x":3},2,{}]}])");
  // A sender does not get its own state back (a plain member: the other's only).
  EXPECT_EQ(untimed(subs[1]->last), R"([{"op":"state","ch":"w:1","from":"u1","key":"pos","body":{"x":3,"y":2}}])");
}

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{}{:02x}", out.empty() ? "" : " ", c);
  return out;
}

// PROTOCOL.md "Batched state deltas", test vectors: the MessagePack the
// batcher's conversion makes of each JSON frame is the page's bytes.
TEST(BatchedDeltaVectors, TheMessagePackBytesOfTheDocumentedFrames) {
  std::string one, three;
  ASSERT_TRUE(protocol::append_msgpack_from_json(one, R"({"op":"sds","tick":101,"ts":1764460800020,"d":[1,{"x":2}]})"));
  EXPECT_EQ(hex(one),
            "84 a2 6f 70 a3 73 64 73 a4 74 69 63 6b 65 a2 74 73 cf 00 00 01 9a d2 0f 28 14 "
            "a1 64 92 01 81 a1 78 02");
  ASSERT_TRUE(protocol::append_msgpack_from_json(
      three, R"({"op":"sds","tick":8823342,"ts":1764460800140,"d":[7,{"x":1.5},9,[[120.5,-3],{"hp":8}],12,[null,{},["fx"]]]})"));
  EXPECT_EQ(hex(three),
            "84 a2 6f 70 a3 73 64 73 a4 74 69 63 6b ce 00 86 a2 2e a2 74 73 cf 00 00 01 9a "
            "d2 0f 28 8c a1 64 96 07 81 a1 78 cb 3f f8 00 00 00 00 00 00 09 92 92 cb 40 5e "
            "20 00 00 00 00 00 fd 81 a2 68 70 08 0c 93 c0 80 91 a2 66 78");
}

TEST_F(TickBatcherTest, AStateArrivingAfterItsChannelsTickLeavesWithThatTicksBatch) {
  // A tick's drain is sliced, and other tasks run between slices (the hub's
  // deliveries among them): a state that arrives for a channel whose tick has
  // come but whose slice has not goes out with that tick's batch, replacing
  // its older body, instead of holding the channel (and its msgs) a tick more.
  constexpr uint32_t kTick = 200;
  auto subs = members("w", kTick, 2, 1);
  bool inject = false;
  fan_.set_before_drain([&] {
    if (!inject) return;
    inject = false;
    fan_.deliver("w", state_of(1, R"({"x":2})"));
    fan_.deliver("w", msg(R"({"m":1})"));
  });
  uint64_t due_tick = 0;
  on_loop([&] {
    // The tick after the one in progress, as TickBatcher::arm counts them.
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
    due_tick = static_cast<uint64_t>(now_ms / kTick) + 1;
    fan_.deliver("w", state_of(1, R"({"x":1})"));
    inject = true;  // the first drain from now on is the tick's
  });
  int frames = 0;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (frames == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    on_loop([&] { frames = subs[1]->frames; });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(kTick / 4));
  on_loop([&] {
    ASSERT_EQ(subs[1]->frames, 1);
    const std::string& f = subs[1]->last;
    EXPECT_EQ(f.substr(0, f.find(",\"ts\"")), R"([{"op":"state","tick":)" + std::to_string(due_tick))
        << "it waited for the next tick: " << f;
    EXPECT_NE(f.find(R"("body":{"x":2}},{"m":1}])"), std::string::npos) << "latest wins, msgs in order: " << f;
    EXPECT_EQ(f.find(R"({"x":1})"), std::string::npos) << f;
  });
}

TEST_F(TickBatcherTest, AStateCarriesItsTickNumberAndTime) {
  auto subs = members("t", 20, 2, 1);
  on_loop([&] { fan_.deliver("t", state_of(1, R"({"x":1})")); });
  for (int i = 0; i < 100 && subs[1]->frames == 0; ++i) {
    std::this_thread::sleep_for(5ms);
    settle();
  }
  ASSERT_EQ(subs[1]->frames, 1);
  const std::string& f = subs[1]->last;
  ASSERT_TRUE(f.starts_with(R"([{"op":"state","tick":)")) << f;
  const uint64_t tick = std::stoull(f.substr(f.find(':', 14) + 1));
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  EXPECT_LE(tick, static_cast<uint64_t>(now_ms / 20)) << f;
  EXPECT_GE(tick + 10, static_cast<uint64_t>(now_ms / 20)) << f;
  EXPECT_NE(f.find(R"(,"ts":)"), std::string::npos) << f;
}

}  // namespace
}  // namespace parley::hub
