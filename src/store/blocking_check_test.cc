// "Loops never wait": the embedded store's reads complete on its own threads, and a
// blocking store operation on an event-loop thread stops the process.
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "runtime/loop_group.h"
#include "store/embedded_store.h"
#include "store/store_test_util.h"

namespace parley::store {
namespace {

using testing::append_sync;
using testing::make_msg;
using testing::make_req;
using testing::TempDir;

const ChannelKey kLobby{"demo", "chat:lobby"};

TEST(BlockingCheck, EmbeddedReadsCompleteOnAStoreThreadNotTheCaller) {
  TempDir dir;
  auto store = EmbeddedStore::open(EmbeddedOptions{dir.sub("db")});
  ASSERT_TRUE(store);
  ASSERT_TRUE(append_sync(**store, make_req(kLobby, make_msg(1, wall_ms()))));

  // Called from an event loop, as the hub does: the call returns at once and the
  // RocksDB work (with its check) runs elsewhere.
  runtime::LoopGroup loops(1);
  loops.start();
  std::promise<std::thread::id> ran_on;
  std::promise<std::thread::id> loop_thread;
  std::promise<size_t> got;
  loops.run_on(0, [&] {
    loop_thread.set_value(std::this_thread::get_id());
    (*store)->read_after(kLobby, 0, 10, [&](Result<std::vector<StoredMessage>> r) {
      ran_on.set_value(std::this_thread::get_id());
      got.set_value(r ? r->size() : 0);
    });
  });
  EXPECT_NE(ran_on.get_future().get(), loop_thread.get_future().get());
  EXPECT_EQ(got.get_future().get(), 1u);
  loops.stop();
}

TEST(BlockingCheckDeathTest, ABlockingReadOnAnEventLoopStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  EXPECT_DEATH(
      {
        auto store = EmbeddedStore::open(EmbeddedOptions{dir.sub("db")});
        if (!store) std::abort();
        runtime::LoopGroup loops(1);
        loops.start();
        std::promise<void> never;
        loops.run_on(0, [&] { (void)(*store)->read_after_now(kLobby, 0, 10); never.set_value(); });
        never.get_future().wait();
        std::_Exit(0);  // not reached: the read must not run on the loop
      },
      "check failed.*LoopGroup::current\\(\\) < 0");
}

TEST(BlockingCheckDeathTest, FlushOnAnEventLoopStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        TempDir dir;
        auto embedded = EmbeddedStore::open(EmbeddedOptions{dir.sub("db")});
        if (!embedded) std::abort();
        runtime::LoopGroup loops(1);
        loops.start();
        std::promise<void> never;
        loops.run_on(0, [&] { (*embedded)->flush(); never.set_value(); });
        never.get_future().wait();
        std::_Exit(0);
      },
      "check failed");
}

}  // namespace
}  // namespace parley::store
