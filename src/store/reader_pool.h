// ReaderPool: the embedded store's read threads. recover() and the history reads
// run here, so a RocksDB lookup or scan never runs on an event loop (RocksDB reads
// are thread-safe; each task uses its own iterator).
//
// Threading: post() and wait_idle() from any thread; tasks run on the pool's
// threads, FIFO from one queue (several threads, so a slow scan does not hold up a
// quick lookup behind it). The queue is not bounded here: the hub bounds what it
// asks (one history request in flight per connection, backfill pages per join).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace parley::store {

class ReaderPool {
 public:
  explicit ReaderPool(unsigned threads);
  // Runs every task already posted, then joins the threads.
  ~ReaderPool();
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  void post(std::function<void()> task);
  // Blocks until every task posted before the call has finished.
  void wait_idle();
  size_t pending() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t posted_ = 0;
  uint64_t finished_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace parley::store
