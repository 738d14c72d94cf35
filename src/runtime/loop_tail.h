// Work a loop task leaves for its own end instead of posting it.
//
// A read handler opens a TailScope around the frames it handles. Work those
// frames cause on the same loop that would otherwise be a posted task of its
// own (the shard's request inbox, its outbox flush, the fan-out drain) is
// deferred to the scope's end: it runs in the same task, in the order it was
// deferred, right after the handler's own work. Each posted task costs a
// dispatch and, in Asio's scheduler, a non-blocking epoll_wait before it
// (issue 9: a message at threads = 1 was one read task and three chained
// posts); deferred, a message is one task and one epoll_wait, like the floor.
//
// A thread that is not a loop opens one too: the embedded store's writer
// around a group commit's completion callbacks, so that what they hand to the
// loops (runtime::Inbox) is posted once per round (inbox.h).
//
// Everything here is per thread: a scope and its tail belong to the
// thread that opened it. Outside a scope defer() refuses and the caller posts
// as before, so code that runs from timers, other loops' hand-offs or tests
// keeps its old path. Work deferred while the tail runs joins the same tail;
// callers guard their deferrals with the flags they had for their posts
// (one drain, one flush, one inbox run at a time), which bounds it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <vector>

namespace parley::runtime {

class TailScope {
 public:
  using Fn = void (*)(void*);

  TailScope() { ++depth_; }
  // The outermost scope runs the tail.
  ~TailScope() {
    if (--depth_ == 0 && !tail_.empty()) run_tail();
  }
  TailScope(const TailScope&) = delete;
  TailScope& operator=(const TailScope&) = delete;

  // Inside a scope: queues fn(arg) for the scope's end and returns true.
  // Outside one false: the caller posts (or runs it) now.
  static bool defer(Fn fn, void* arg) {
    if (depth_ == 0) return false;
    tail_.push_back({fn, arg});
    return true;
  }
  // defer() for work that must run on `loop`: only when the calling thread is
  // running it (a scope belongs to its own thread's loop); work for another
  // loop gets false and is posted.
  static bool defer_on(boost::asio::io_context& loop, Fn fn, void* arg) {
    return depth_ != 0 && loop.get_executor().running_in_this_thread() && defer(fn, arg);
  }
  static bool active() { return depth_ != 0; }

 private:
  struct Item {
    Fn fn;
    void* arg;
  };
  static void run_tail();

  static constinit thread_local int depth_;
  static thread_local std::vector<Item> tail_;
};

}  // namespace parley::runtime
