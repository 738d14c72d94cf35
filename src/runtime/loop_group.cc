#include "runtime/loop_group.h"

#include <pthread.h>

#include <string>

namespace parley::runtime {
namespace {
thread_local int t_loop_index = -1;
}

LoopGroup::LoopGroup(unsigned count) {
  if (count == 0) count = 1;
  for (unsigned i = 0; i < count; ++i) {
    // concurrency_hint 1: each context is run by exactly one thread, so Asio
    // can skip its internal locking.
    auto ctx = std::make_unique<boost::asio::io_context>(1);
    auto guard = boost::asio::make_work_guard(*ctx);
    loops_.push_back(std::unique_ptr<Loop>(new Loop{std::move(ctx), std::move(guard), {}}));
  }
}

LoopGroup::~LoopGroup() { stop(); }

void LoopGroup::start() {
  for (unsigned i = 0; i < loops_.size(); ++i) {
    Loop* l = loops_[i].get();
    l->thread = std::thread([l, i] {
      t_loop_index = static_cast<int>(i);
      std::string name = "parley-loop-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      l->ctx->run();
    });
  }
}

void LoopGroup::stop() {
  for (auto& l : loops_) l->guard.reset();
  for (auto& l : loops_) l->ctx->stop();
  for (auto& l : loops_) {
    if (l->thread.joinable()) l->thread.join();
  }
}

int LoopGroup::current() { return t_loop_index; }

}  // namespace parley::runtime
