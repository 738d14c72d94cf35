// A queue that threads push to and one loop drains in batches.
//
// Any thread may push(); the first push after a drain posts one task to the
// loop, which takes everything queued so far and hands it to `drain` (on the
// loop, in push order). A burst of N items from another thread (a store's
// group commit completing N appends) costs one post and one wake-up of the
// loop instead of N, and the drain can finish the batch's work at once
// (e.g. flush what it queued for other loops) instead of posting more.
//
// Inside a runtime::TailScope the first push does not post at once: on the
// inbox's own loop (a session's request to a shard there) the drain runs at
// the scope's end, no task at all; on any other thread in a scope (a store
// writer's completion round, another loop's read task) the one post is made at
// the scope's end, after everything the scope pushes has joined the batch (a
// post at the first push woke the loop to drain the first few while the
// thread was still pushing the rest: several wake-ups and drains per round).
//
// A drain is a batch's scope of its own (TailScope::kOwnTail): what the batch
// defers (its posts to other loops, work for this loop) runs at the drain's
// end, even when the drain runs inside a bigger task. Outside any scope (a
// posted drain) that end is the task's end, corked writes included.
//
// The mutex guards only the vector swap and push, never the drain.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <mutex>
#include <vector>

#include "runtime/loop_tail.h"

namespace parley::runtime {

template <typename T>
class Inbox {
 public:
  using Drain = std::function<void(std::vector<T>& batch)>;
  Inbox(boost::asio::io_context& loop, Drain drain) : loop_(loop), drain_(std::move(drain)) {}
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread.
  void push(T item) {
    bool first;
    {
      std::lock_guard lock(mu_);
      first = items_.empty();
      items_.push_back(std::move(item));
    }
    if (!first) return;  // its drain is posted or deferred already
    if (TailScope::defer_on(loop_, [](void* self) { static_cast<Inbox*>(self)->run(); }, this)) {
      return;
    }
    if (TailScope::defer_post([](void* self) { static_cast<Inbox*>(self)->post(); }, this)) return;
    post();
  }

  // On the loop: drains what is queued now instead of when the posted drain
  // comes up (that one then finds less, or nothing). Not from inside `drain`.
  void run() {
    TailScope batch(TailScope::kOwnTail);  // its tail runs after running_ is reset
    if (running_) return;
    {
      std::lock_guard lock(mu_);
      if (items_.empty()) return;
      batch_.swap(items_);
    }
    running_ = true;
    drain_(batch_);
    running_ = false;
    batch_.clear();  // keeps its capacity for the next batch
  }

 private:
  void post() {
    boost::asio::post(loop_, [this] { run(); });
  }

  boost::asio::io_context& loop_;
  Drain drain_;
  std::mutex mu_;
  std::vector<T> items_;  // guarded by mu_
  std::vector<T> batch_;  // the loop's: the batch being drained
  bool running_ = false;  // the loop's
};

}  // namespace parley::runtime
