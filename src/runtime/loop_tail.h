// The end of a task: work a task leaves for its end instead of posting it, and
// the point where the bytes it corked leave.
//
// A read handler opens a TailScope around the frames it handles. Work those
// frames cause on the same loop that would otherwise be a posted task of its
// own (a shard's request inbox, its replies to this loop, the fan-out drain)
// is deferred to the scope's end: it runs in the same task, in the order it
// was deferred, right after the handler's own work. Each posted task costs a
// dispatch and, in Asio's scheduler, a non-blocking epoll_wait before it
// (issue 9: a message at threads = 1 was one read task and three chained
// posts); deferred, a message is one task and one epoll_wait, like the floor.
// A thread that is not a loop opens one too: the embedded store's writer
// around a group commit's completion callbacks, so that what they hand to the
// loops (runtime::Inbox) is posted once per round (inbox.h).
//
// At a scope's end its posts to other loops (defer_post: runtime::Inbox) go
// first, then its work: the other loops start on theirs while this one sends
// its own fan-out.
//
// A scope nested in another leaves its work to the outermost one, except a
// batch's scope (kOwnTail: each runtime::Inbox drain opens one): what a batch
// causes runs at the batch's end, also inside a bigger task, so a fan-out
// drain that takes a batch first (hub::TickBatcher::set_before_drain) sends
// what the batch delivered.
//
// Corked writes (an ack: net::Connection::send_corked) are the task's last
// step: the outermost scope's end writes every writer corked in the task, in
// the order corked, after its deferred work. A fan-out drain is the flush
// point of its own (flush_corked), so the acks go before everyone's
// deliveries and each in one write with its connection's delivery.
//
// Everything here is per thread: a scope, its tail and its corked writers
// belong to the thread that opened it. Outside a scope defer() refuses and the
// caller posts, so code that runs from timers, other loops' hand-offs or tests
// keeps its posted path; a cork there posts the flush point. Work deferred while the
// tail runs joins the same tail; callers guard their deferrals with the flags
// they had for their posts (one drain at a time), which bounds it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <memory>
#include <vector>

namespace parley::runtime {

// What holds corked bytes (net::Connection): written at the flush point.
class CorkedWriter {
 public:
  virtual void write_corked() = 0;

 protected:
  ~CorkedWriter() = default;
};

class TailScope {
 public:
  using Fn = void (*)(void*);
  enum OwnTail { kOwnTail };

  TailScope() : mark_(kNoMark), post_mark_(kNoMark) { ++depth_; }
  // Runs what is deferred inside it at its own end, nested or not.
  explicit TailScope(OwnTail) : mark_(tail_.size()), post_mark_(posts_.size()) { ++depth_; }
  ~TailScope() {
    // Still counted while its tail runs: what the tail defers joins it.
    if (depth_ == 1) {
      end_task();
    } else if (mark_ != kNoMark) {
      run_from(mark_, post_mark_);
    }
    --depth_;
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
  // defer() for a post to another loop: at the scope's end these go first,
  // before its deferred work, so the other loops start on theirs meanwhile.
  static bool defer_post(Fn fn, void* arg) {
    if (depth_ == 0) return false;
    posts_.push_back({fn, arg});
    return true;
  }
  // defer() for work that must run on `loop`: only when the calling thread is
  // running it (a scope belongs to its own thread's loop); work for another
  // loop gets false and is posted.
  static bool defer_on(boost::asio::io_context& loop, Fn fn, void* arg) {
    return depth_ != 0 && loop.get_executor().running_in_this_thread() && defer(fn, arg);
  }
  static bool active() { return depth_ != 0; }

  // `w` (on this thread's loop, `ex`) holds corked bytes: written at the
  // task's flush point. Outside a scope the first cork posts that point to
  // `ex` (a fan-out drain posted before it comes first and writes them). The
  // caller corks once per flush (net::Connection keeps a flag).
  template <typename Executor>
  static void cork(std::weak_ptr<CorkedWriter> w, const Executor& ex) {
    const bool first = corked_.empty();
    corked_.push_back(std::move(w));
    if (depth_ == 0 && first) boost::asio::post(ex, [] { flush_corked(); });
  }
  // The flush point: writes what every writer corked so far holds, in the
  // order they corked.
  static void flush_corked();

 private:
  struct Item {
    Fn fn;
    void* arg;
  };
  static constexpr size_t kNoMark = static_cast<size_t>(-1);
  static void run_from(size_t mark, size_t post_mark);
  static void end_task();

  size_t mark_;  // kOwnTail: where its tail starts; kNoMark: the outermost runs it
  size_t post_mark_;  // the same for its posts

  static constinit thread_local int depth_;
  static thread_local std::vector<Item> tail_;
  static thread_local std::vector<Item> posts_;
  static thread_local std::vector<std::weak_ptr<CorkedWriter>> corked_;
};

}  // namespace parley::runtime
