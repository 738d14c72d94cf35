#include "store/reader_pool.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace parley::store {

ReaderPool::ReaderPool(unsigned threads) {
  threads = std::max(threads, 1u);
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "parley-read");
      run();
    });
  }
}

ReaderPool::~ReaderPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReaderPool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
    ++posted_;
  }
  work_cv_.notify_one();
}

void ReaderPool::wait_idle() {
  std::unique_lock lock(mu_);
  const uint64_t target = posted_;
  idle_cv_.wait(lock, [&] { return finished_ >= target; });
}

size_t ReaderPool::pending() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(posted_ - finished_);
}

void ReaderPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
      if (queue_.empty()) return;  // stopping, and nothing is left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    task = nullptr;  // release what the task captured before counting it done
    {
      std::lock_guard lock(mu_);
      ++finished_;
    }
    idle_cv_.notify_all();
  }
}

}  // namespace parley::store
