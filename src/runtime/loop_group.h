// The per-core event loops: one single-threaded io_context per thread.
//
// Shared-nothing: loop i hosts hub shard i and the connections it accepted.
// Work crosses loops only by posting (run_on), never by locking shared state.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <thread>
#include <vector>

namespace parley::runtime {

class LoopGroup {
 public:
  explicit LoopGroup(unsigned count);
  ~LoopGroup();
  LoopGroup(const LoopGroup&) = delete;
  LoopGroup& operator=(const LoopGroup&) = delete;

  unsigned size() const { return static_cast<unsigned>(loops_.size()); }
  boost::asio::io_context& loop(unsigned i) { return *loops_[i]->ctx; }

  // Runs `fn` on loop i (FIFO per sender thread). Any thread.
  template <typename Fn>
  void run_on(unsigned i, Fn&& fn) {
    boost::asio::post(*loops_[i]->ctx, std::forward<Fn>(fn));
  }

  // Starts one thread per loop. Returns at once.
  void start();
  // Stops the loops (work still queued is dropped: drain before) and joins them.
  void stop();

  // The index of the loop the calling thread runs, or -1 off-loop.
  static int current();

 private:
  struct Loop {
    std::unique_ptr<boost::asio::io_context> ctx;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
    std::thread thread;
  };
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace parley::runtime
