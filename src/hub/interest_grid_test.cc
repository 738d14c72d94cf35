// Interest areas at the tick batcher (interest_grid.h): a positioned state
// reaches the members of its own and the neighbouring cells only, a member's
// cell is where its own latest positioned state put it, a member that never
// positioned itself and every non-positioned event reach everyone. A real
// loop (runtime::LoopGroup of one), recording subscribers.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hub/interest_grid.h"
#include "hub/tick_batcher.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"

namespace parley::hub {
namespace {

using namespace std::chrono_literals;

// Keeps every frame's text; touched on the loop only, read after a round trip.
class RecordingSub final : public Subscriber {
 public:
  explicit RecordingSub(uint64_t conn) : conn_(conn), user_("u" + std::to_string(conn)) {}
  uint64_t conn_id() const override { return conn_; }
  const std::string& user_id() const override { return user_; }
  unsigned loop() const override { return 0; }
  bool gone() const override { return false; }
  void send(net::OutFrame&& frame) override {
    std::string text;
    for (const auto& p : frame.parts()) text.append(static_cast<const char*>(p.data()), p.size());
    frames.push_back(std::move(text));
  }
  // Everything received so far, frames concatenated; cleared by take().
  std::string take() {
    std::string all;
    for (const auto& f : frames) all += f;
    frames.clear();
    return all;
  }
  std::vector<std::string> frames;

 private:
  uint64_t conn_;
  std::string user_;
};

// A state of `conn` with key `key`; positioned when `cell` is given.
ChannelEvent state(uint64_t conn, const std::string& text, std::optional<Cell> cell,
                   const std::string& key = "pos") {
  return ChannelEvent{std::make_shared<const std::string>(text), conn, {},
                      std::to_string(conn) + '\0' + key, 0, cell};
}

ChannelEvent msg(const std::string& text) {
  return ChannelEvent{std::make_shared<const std::string>(text), 0, {}, {}, 0};
}

class InterestGridTest : public ::testing::Test {
 protected:
  InterestGridTest() : loops_(1), metrics_(1), fan_(0, loops_.loop(0), metrics_.slot(0)) {
    loops_.start();
  }
  ~InterestGridTest() override { loops_.stop(); }

  template <typename Fn>
  void on_loop(Fn fn) {
    std::promise<void> ran;
    loops_.run_on(0, [&] {
      fn();
      ran.set_value();
    });
    ASSERT_EQ(ran.get_future().wait_for(5s), std::future_status::ready);
  }

  // Members 1..n of channel "w" (tick_ms 0: each event is sent inside deliver).
  std::vector<std::shared_ptr<RecordingSub>> members(uint32_t tick_ms, int n) {
    std::vector<std::shared_ptr<RecordingSub>> subs;
    on_loop([&] {
      for (int i = 1; i <= n; ++i) {
        subs.push_back(std::make_shared<RecordingSub>(i));
        fan_.add_member("w", tick_ms, subs.back());
      }
    });
    return subs;
  }

  void deliver(ChannelEvent ev) {
    on_loop([&] { fan_.deliver("w", std::move(ev)); });
  }

  // Empties every member's record (on the loop).
  void clear(const std::vector<std::shared_ptr<RecordingSub>>& subs) {
    on_loop([&] {
      for (auto& s : subs) s->take();
    });
  }

  runtime::LoopGroup loops_;
  metrics::Metrics metrics_;
  TickBatcher fan_;
};

TEST(CellOf, FloorsEachAxisAndLeavesZAtZeroIn2D) {
  protocol::Position p2{{-0.5, 19.99, 0}, 2};
  EXPECT_EQ(cell_of(p2, 10), (Cell{-1, 1, 0}));
  protocol::Position p3{{10, -10, 25}, 3};
  EXPECT_EQ(cell_of(p3, 10), (Cell{1, -1, 2}));
  protocol::Position far{{1e15, -1e15, 0}, 2};
  EXPECT_EQ(cell_of(far, 0.001), (Cell{1'000'000'000'000'000'000, -1'000'000'000'000'000'000, 0}));
}

TEST_F(InterestGridTest, APositionedStateReachesItsOwnAndNeighbouringCellsOnly) {
  auto s = members(0, 5);  // 1 at (0,0), 2 at (1,1) near, 3 at (2,0) far, 4 at (-1,-1) near, 5 never positioned
  deliver(state(1, R"({"a":0})", Cell{0, 0, 0}));
  deliver(state(2, R"({"b":0})", Cell{1, 1, 0}));
  deliver(state(3, R"({"c":0})", Cell{2, 0, 0}));
  deliver(state(4, R"({"d":0})", Cell{-1, -1, 0}));
  clear(s);
  deliver(state(1, R"({"a":1})", Cell{0, 0, 0}));
  on_loop([&] {
    EXPECT_EQ(s[0]->take(), "");  // never its own
    EXPECT_EQ(s[1]->take(), R"([{"a":1}])");
    EXPECT_EQ(s[2]->take(), "");  // two cells away
    EXPECT_EQ(s[3]->take(), R"([{"a":1}])");
    EXPECT_EQ(s[4]->take(), R"([{"a":1}])");  // no position: everything
  });
  // 3's state at (2,0) reaches 2 at (1,1) and 5, not 1 or 4.
  deliver(state(3, R"({"c":1})", Cell{2, 0, 0}));
  on_loop([&] {
    EXPECT_EQ(s[0]->take(), "");
    EXPECT_EQ(s[1]->take(), R"([{"c":1}])");
    EXPECT_EQ(s[2]->take(), "");
    EXPECT_EQ(s[3]->take(), "");
    EXPECT_EQ(s[4]->take(), R"([{"c":1}])");
  });
}

TEST_F(InterestGridTest, MovingChangesWhatAMemberReceivesWithoutARejoin) {
  auto s = members(0, 2);
  deliver(state(1, "1", Cell{0, 0, 0}));
  deliver(state(2, "2", Cell{5, 5, 0}));
  clear(s);
  deliver(state(1, "10", Cell{0, 0, 0}));
  on_loop([&] { EXPECT_EQ(s[1]->take(), ""); });
  // 2 moves next to 1: its own move reaches 1, and 1's next state reaches it.
  deliver(state(2, "20", Cell{1, 0, 0}));
  on_loop([&] { EXPECT_EQ(s[0]->take(), "[20]"); });
  deliver(state(1, "11", Cell{0, 0, 0}));
  on_loop([&] { EXPECT_EQ(s[1]->take(), "[11]"); });
  // And away again.
  deliver(state(2, "21", Cell{-5, 0, 0}));
  deliver(state(1, "12", Cell{0, 0, 0}));
  on_loop([&] {
    EXPECT_EQ(s[0]->take(), "");
    EXPECT_EQ(s[1]->take(), "");
  });
}

TEST_F(InterestGridTest, NonPositionedEventsReachEveryMember) {
  auto s = members(0, 2);
  deliver(state(1, "1", Cell{0, 0, 0}));
  deliver(state(2, "2", Cell{9, 9, 0}));
  clear(s);
  deliver(msg(R"({"m":1})"));
  deliver(state(1, R"({"np":1})", std::nullopt, "hp"));
  on_loop([&] {
    EXPECT_EQ(s[0]->take(), R"([{"m":1}])");
    EXPECT_EQ(s[1]->take(), R"([{"m":1}][{"np":1}])");
  });
}

TEST_F(InterestGridTest, ThreeDimensionalNeighbourhoodsIncludeTheCellsAboveAndBelow) {
  auto s = members(0, 3);
  deliver(state(1, "1", Cell{0, 0, 0}));
  deliver(state(2, "2", Cell{0, 0, 1}));
  deliver(state(3, "3", Cell{0, 0, 2}));
  clear(s);
  deliver(state(1, "10", Cell{1, 1, 1}));
  on_loop([&] {
    EXPECT_EQ(s[1]->take(), "[10]");
    EXPECT_EQ(s[2]->take(), "[10]");
  });
  deliver(state(1, "11", Cell{0, 0, 0}));
  on_loop([&] {
    EXPECT_EQ(s[1]->take(), "[11]");
    EXPECT_EQ(s[2]->take(), "");  // two cells up
  });
}

// A tick's batch: events stay in order, latest wins per sender and key, and
// each member's frame holds only what its neighbourhood and the rest give it.
TEST_F(InterestGridTest, ABatchKeepsOrderAndCoalescingPerMember) {
  auto s = members(20, 3);
  // Positions first, then one batch: settle them through one tick.
  on_loop([&] {
    fan_.deliver("w", state(1, "1", Cell{0, 0, 0}));
    fan_.deliver("w", state(2, "2", Cell{1, 0, 0}));
    fan_.deliver("w", state(3, "3", Cell{7, 7, 0}));
  });
  std::this_thread::sleep_for(100ms);
  clear(s);
  on_loop([&] {
    fan_.deliver("w", state(1, R"("a1")", Cell{0, 0, 0}));
    fan_.deliver("w", msg(R"("m1")"));
    fan_.deliver("w", state(3, R"("c1")", Cell{7, 7, 0}));
    fan_.deliver("w", state(1, R"("a2")", Cell{0, 0, 0}));  // replaces a1 in place
    fan_.deliver("w", msg(R"("m2")"));
  });
  std::this_thread::sleep_for(100ms);
  on_loop([&] {
    EXPECT_EQ(s[0]->take(), R"(["m1","m2"])");
    EXPECT_EQ(s[1]->take(), R"(["a2","m1","m2"])");
    EXPECT_EQ(s[2]->take(), R"(["m1","m2"])");
  });
}

TEST_F(InterestGridTest, AMemberWhoLeavesAndRejoinsStartsWithoutACell) {
  auto s = members(0, 2);
  deliver(state(1, "1", Cell{0, 0, 0}));
  deliver(state(2, "2", Cell{9, 9, 0}));
  on_loop([&] {
    fan_.remove_member("w", 2);
    fan_.add_member("w", 0, s[1]);
  });
  clear(s);
  deliver(state(1, "10", Cell{0, 0, 0}));
  on_loop([&] { EXPECT_EQ(s[1]->take(), "[10]"); });
}

}  // namespace
}  // namespace parley::hub
