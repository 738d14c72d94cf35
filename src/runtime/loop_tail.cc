#include "runtime/loop_tail.h"

namespace parley::runtime {

constinit thread_local int TailScope::depth_ = 0;
thread_local std::vector<TailScope::Item> TailScope::tail_;
thread_local std::vector<TailScope::Item> TailScope::posts_;
thread_local std::vector<std::weak_ptr<CorkedWriter>> TailScope::corked_;

void TailScope::run_from(size_t mark, size_t post_mark) {
  do {
    for (size_t i = post_mark; i < posts_.size(); ++i) {
      const Item item = posts_[i];
      item.fn(item.arg);
    }
    posts_.resize(post_mark);
    for (size_t i = mark; i < tail_.size(); ++i) {
      const Item item = tail_[i];  // by value: a deferral may grow the vector
      item.fn(item.arg);
    }
    tail_.resize(mark);
  } while (posts_.size() > post_mark);  // what the work posted
}

void TailScope::end_task() {
  // Writing defers nothing today; the loop keeps the order if it ever does.
  do {
    run_from(0, 0);
    flush_corked();
  } while (!tail_.empty() || !posts_.empty());
}

void TailScope::flush_corked() {
  // By index: a write may cork another writer (it joins this flush).
  for (size_t i = 0; i < corked_.size(); ++i) {
    if (auto w = corked_[i].lock()) w->write_corked();
  }
  corked_.clear();
}

}  // namespace parley::runtime
