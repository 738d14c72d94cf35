#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/every_loop.h"
#include "runtime/gate.h"
#include "runtime/inbox.h"
#include "runtime/loop_group.h"
#include "runtime/loop_tail.h"
#include "runtime/outbox.h"

namespace parley::runtime {
namespace {

using namespace std::chrono_literals;

TEST(InboxTest, ABurstFromAnotherThreadIsDrainedAsOneBatchInOrder) {
  LoopGroup loops(1);
  std::vector<std::vector<int>> batches;  // the loop's
  Inbox<int> inbox(loops.loop(0), [&](std::vector<int>& batch) { batches.push_back(batch); });
  loops.start();
  // Hold the loop busy while the burst arrives, as a store thread completing a
  // group commit finds a busy loop.
  std::promise<void> release;
  std::promise<void> holding;
  loops.run_on(0, [&] {
    holding.set_value();
    release.get_future().wait();
  });
  holding.get_future().wait();
  for (int i = 0; i < 100; ++i) inbox.push(i);
  release.set_value();
  std::promise<void> after;
  loops.run_on(0, [&] { after.set_value(); });  // behind the one drain task
  ASSERT_EQ(after.get_future().wait_for(5s), std::future_status::ready);
  loops.stop();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(batches[0][i], i);
}

TEST(InboxTest, APushAfterADrainPostsAgain) {
  LoopGroup loops(1);
  std::atomic<int> drained{0};
  Inbox<int> inbox(loops.loop(0), [&](std::vector<int>& batch) { drained += batch.size(); });
  loops.start();
  for (int i = 0; i < 3; ++i) {
    inbox.push(i);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (drained.load() < i + 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(drained.load(), i + 1);
  }
  loops.stop();
}

TEST(TailScopeTest, DefersToTheOutermostScopesEndInOrder) {
  std::vector<int> ran;
  auto push = [](void* v) { static_cast<std::vector<int>*>(v)->push_back(static_cast<int>(static_cast<std::vector<int>*>(v)->size())); };
  EXPECT_FALSE(TailScope::defer(push, &ran));  // no scope: the caller posts
  {
    TailScope outer;
    EXPECT_TRUE(TailScope::defer(push, &ran));
    {
      TailScope inner;
      EXPECT_TRUE(TailScope::defer(push, &ran));
    }
    EXPECT_TRUE(ran.empty());  // the inner scope's end is not the task's end
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1}));
  EXPECT_FALSE(TailScope::active());
}

TEST(TailScopeTest, WorkDeferredByTheTailJoinsIt) {
  struct Chain {
    int left = 3;
    int runs = 0;
    static void step(void* p) {
      auto* c = static_cast<Chain*>(p);
      ++c->runs;
      if (--c->left > 0) EXPECT_TRUE(TailScope::defer(&Chain::step, c));
    }
  } chain;
  {
    TailScope scope;
    TailScope::defer(&Chain::step, &chain);
  }
  EXPECT_EQ(chain.runs, 3);
  EXPECT_FALSE(TailScope::defer(&Chain::step, &chain));  // over: the next scope starts empty
}

TEST(InboxTest, APushOnItsLoopInsideATailScopeDrainsAtTheScopesEndWithoutATask) {
  boost::asio::io_context io;
  std::vector<int> drained;
  Inbox<int> inbox(io, [&](std::vector<int>& batch) {
    drained.insert(drained.end(), batch.begin(), batch.end());
  });
  size_t tasks_after = 99;
  boost::asio::post(io, [&] {
    {
      TailScope scope;
      inbox.push(1);
      inbox.push(2);
      EXPECT_TRUE(drained.empty());
    }
    EXPECT_EQ(drained, (std::vector<int>{1, 2}));
    tasks_after = io.poll();  // nothing was posted for the drain
  });
  io.run();
  EXPECT_EQ(tasks_after, 0u);
  // Outside a scope a push still posts its drain.
  inbox.push(3);
  EXPECT_EQ(drained.size(), 2u);
  io.restart();
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_EQ(drained, (std::vector<int>{1, 2, 3}));
}

TEST(InboxTest, PushesFromAnotherThreadsScopePostOnceAtItsEnd) {
  // A store writer's completion round: the loop is woken once, for all of it.
  LoopGroup loops(1);
  loops.start();
  std::mutex mu;
  std::vector<std::vector<int>> batches;
  Inbox<int> inbox(loops.loop(0), [&](std::vector<int>& batch) {
    std::lock_guard lock(mu);
    batches.push_back(batch);
  });
  std::thread writer([&] {
    TailScope round;
    for (int i = 0; i < 5; ++i) {
      inbox.push(i);
      std::this_thread::sleep_for(2ms);  // the loop would have drained by now
    }
    std::lock_guard lock(mu);
    EXPECT_TRUE(batches.empty());  // nothing posted before the round ends
  });
  writer.join();
  std::promise<void> drained;
  loops.run_on(0, [&] { drained.set_value(); });  // behind the round's post
  ASSERT_EQ(drained.get_future().wait_for(5s), std::future_status::ready);
  loops.stop();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0], (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(TailScopeTest, ABatchsScopeRunsItsOwnWorkAtItsEndInsideABiggerTask) {
  // An Inbox drain inside a fan-out drain (hub::TickBatcher::set_before_drain):
  // what the batch causes must be done before the fan-out goes on.
  std::vector<int> ran;
  auto push = [](void* v) { static_cast<std::vector<int>*>(v)->push_back(static_cast<int>(static_cast<std::vector<int>*>(v)->size())); };
  {
    TailScope task;
    EXPECT_TRUE(TailScope::defer(push, &ran));  // the task's: at its end
    {
      TailScope batch(TailScope::kOwnTail);
      EXPECT_TRUE(TailScope::defer(push, &ran));
      {
        TailScope inner;  // a plain scope inside the batch leaves its work to the batch
        EXPECT_TRUE(TailScope::defer(push, &ran));
      }
      EXPECT_TRUE(ran.empty());
    }
    EXPECT_EQ(ran, (std::vector<int>{0, 1}));  // the batch's two, not the task's
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(TailScope::active());
}

TEST(TailScopeTest, PostsToOtherLoopsGoBeforeTheDeferredWork) {
  std::vector<std::string> log;
  struct Step {
    std::vector<std::string>* log;
    const char* what;
    static void run(void* s) { static_cast<Step*>(s)->log->push_back(static_cast<Step*>(s)->what); }
  } work{&log, "work"}, post{&log, "post"};
  {
    TailScope task;
    EXPECT_TRUE(TailScope::defer(&Step::run, &work));
    EXPECT_TRUE(TailScope::defer_post(&Step::run, &post));
  }
  EXPECT_EQ(log, (std::vector<std::string>{"post", "work"}));
  EXPECT_FALSE(TailScope::defer_post(&Step::run, &post));  // no scope: the caller posts
}

// A writer that records when it was written.
struct RecordingWriter final : CorkedWriter {
  RecordingWriter(int id, std::vector<std::string>* log) : id(id), log(log) {}
  void write_corked() override { log->push_back("write " + std::to_string(id)); }
  int id;
  std::vector<std::string>* log;
};

TEST(TailScopeTest, CorkedWritersAreWrittenAtTheTasksEndAfterItsWorkInOrder) {
  boost::asio::io_context io;
  std::vector<std::string> log;
  auto a = std::make_shared<RecordingWriter>(1, &log);
  auto b = std::make_shared<RecordingWriter>(2, &log);
  struct Work {
    std::vector<std::string>* log;
    static void run(void* w) { static_cast<Work*>(w)->log->push_back("work"); }
  } work{&log};
  {
    TailScope task;
    TailScope::cork(a, io.get_executor());
    {
      TailScope batch(TailScope::kOwnTail);  // not the task's end: no write
      TailScope::cork(b, io.get_executor());
      TailScope::defer(&Work::run, &work);
    }
    EXPECT_EQ(log, (std::vector<std::string>{"work"}));
  }
  EXPECT_EQ(log, (std::vector<std::string>{"work", "write 1", "write 2"}));
  EXPECT_EQ(io.poll(), 0u);  // nothing was posted
}

TEST(TailScopeTest, AFlushPointWritesEarlierAndACorkOutsideAScopePostsOneWrite) {
  boost::asio::io_context io;
  std::vector<std::string> log;
  auto a = std::make_shared<RecordingWriter>(1, &log);
  auto b = std::make_shared<RecordingWriter>(2, &log);
  {
    TailScope task;
    TailScope::cork(a, io.get_executor());
    TailScope::flush_corked();  // a fan-out drain's flush point
    EXPECT_EQ(log, (std::vector<std::string>{"write 1"}));
  }
  EXPECT_EQ(log.size(), 1u);  // written once
  log.clear();
  TailScope::cork(a, io.get_executor());
  TailScope::cork(b, io.get_executor());
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(io.poll(), 1u);  // one posted flush for both
  EXPECT_EQ(log, (std::vector<std::string>{"write 1", "write 2"}));
  // A writer gone before its flush is skipped.
  log.clear();
  auto gone = std::make_shared<RecordingWriter>(3, &log);
  TailScope::cork(gone, io.get_executor());
  gone.reset();
  io.restart();
  EXPECT_EQ(io.poll(), 1u);
  EXPECT_TRUE(log.empty());
}

TEST(OutboxTest, TasksForAnotherLoopKeepTheirOrderAndArePostedAtTheScopesEnd) {
  LoopGroup loops(2);
  loops.start();
  Outbox out(loops);
  std::mutex mu;
  std::vector<int> ran_on_1;  // loop 1's, in the order run
  int ran_before_check = -1;
  std::promise<void> checked;
  loops.run_on(0, [&] {
    {
      TailScope task;  // a task on loop 0 sending to loop 1
      for (int i = 0; i < 5; ++i) {
        out.to(1, [&, i] {
          EXPECT_EQ(LoopGroup::current(), 1);
          std::lock_guard lock(mu);
          ran_on_1.push_back(i);
        });
        std::this_thread::sleep_for(2ms);  // a post at the first send would have run by now
      }
      std::lock_guard lock(mu);
      EXPECT_TRUE(ran_on_1.empty()) << "posted before the scope's end";
    }
    // Posted after the scope's one post: runs behind it.
    loops.run_on(1, [&] {
      std::lock_guard lock(mu);
      ran_before_check = static_cast<int>(ran_on_1.size());
      checked.set_value();
    });
  });
  ASSERT_EQ(checked.get_future().wait_for(5s), std::future_status::ready);
  loops.stop();
  EXPECT_EQ(ran_before_check, 5);
  EXPECT_EQ(ran_on_1, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(OutboxTest, TasksForTheSendersOwnLoopRunAtTheScopesEnd) {
  LoopGroup loops(1);
  loops.start();
  Outbox out(loops);
  std::vector<std::string> log;
  std::promise<void> done;
  loops.run_on(0, [&] {
    {
      TailScope task;
      out.to(0, [&] { log.push_back("first"); });
      out.to(0, [&] { log.push_back("second"); });
      log.push_back("task");
    }
    log.push_back("after");
    done.set_value();
  });
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
  loops.stop();
  EXPECT_EQ(log, (std::vector<std::string>{"task", "first", "second", "after"}));
}

TEST(GateTest, CloseOnAnEmptyGateCompletesAtOnce) {
  Gate g;
  bool fired = false;
  g.close([&] { fired = true; });
  EXPECT_TRUE(fired);
  EXPECT_TRUE(g.is_closed());
}

TEST(GateTest, CloseCompletesWhenTheLastUnitLeaves) {
  Gate g;
  ASSERT_TRUE(g.try_enter());
  ASSERT_TRUE(g.try_enter());
  int fired = 0;
  g.close([&] { ++fired; });
  EXPECT_EQ(fired, 0);
  g.leave();
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(g.count(), 1u);
  g.leave();
  EXPECT_EQ(fired, 1);
}

TEST(GateTest, NoWorkEntersAfterClose) {
  Gate g;
  ASSERT_TRUE(g.try_enter());
  int fired = 0;
  g.close([&] { ++fired; });
  EXPECT_FALSE(g.try_enter());
  EXPECT_EQ(g.count(), 1u);
  {
    Gate::Holder h(g);
    EXPECT_FALSE(h);
  }
  EXPECT_EQ(fired, 0) << "a refused entry must not complete the close";
  g.leave();
  EXPECT_EQ(fired, 1);
}

TEST(GateTest, HolderLeavesOnDestruction) {
  Gate g;
  int fired = 0;
  {
    Gate::Holder h(g);
    ASSERT_TRUE(h);
    Gate::Holder moved(std::move(h));
    g.close([&] { ++fired; });
    EXPECT_EQ(fired, 0);
  }
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(g.count(), 0u);
}

// Threads enter and leave while another closes: the completion runs exactly
// once, and only after every admitted unit has left.
TEST(GateTest, CloseRacingEnterAndLeaveCompletesExactlyOnce) {
  for (int round = 0; round < 200; ++round) {
    Gate g;
    std::atomic<int> inside{0};
    std::atomic<int> fired{0};
    std::atomic<int> inside_at_fire{-1};
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          if (!g.try_enter()) return;
          inside.fetch_add(1);
          inside.fetch_sub(1);
          g.leave();
        }
      });
    }
    g.close([&] {
      inside_at_fire = inside.load();
      fired.fetch_add(1);
    });
    for (auto& w : workers) w.join();
    EXPECT_EQ(fired.load(), 1) << "round " << round;
    EXPECT_EQ(inside_at_fire.load(), 0) << "round " << round;
    EXPECT_EQ(g.count(), 0u);
  }
}

TEST(EveryLoopTest, RunsOnEveryLoopThenCompletesOnce) {
  LoopGroup loops(3);
  loops.start();
  std::vector<std::atomic<int>> ran_on(3);
  std::atomic<int> wrong_thread{0};
  std::promise<void> done;
  run_on_every_loop(
      loops,
      [&](unsigned i) {
        if (LoopGroup::current() != static_cast<int>(i)) wrong_thread.fetch_add(1);
        ran_on[i].fetch_add(1);
      },
      [&] { done.set_value(); });
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
  for (auto& r : ran_on) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(wrong_thread.load(), 0);
  loops.stop();
}

TEST(EveryLoopTest, WorkPostedBeforeRunsBeforeTheBarrier) {
  LoopGroup loops(2);
  loops.start();
  std::atomic<int> earlier{0};
  std::atomic<int> seen_at_barrier{-1};
  std::promise<void> done;
  // Each loop gets slow work first; the barrier must run behind it.
  for (unsigned i = 0; i < loops.size(); ++i) {
    loops.run_on(i, [&] {
      std::this_thread::sleep_for(20ms);
      earlier.fetch_add(1);
    });
  }
  run_on_every_loop(loops, nullptr, [&] {
    seen_at_barrier = earlier.load();
    done.set_value();
  });
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
  EXPECT_EQ(seen_at_barrier.load(), 2);
  loops.stop();
}

}  // namespace
}  // namespace parley::runtime
