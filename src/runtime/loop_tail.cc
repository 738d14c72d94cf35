#include "runtime/loop_tail.h"

namespace parley::runtime {

constinit thread_local int TailScope::depth_ = 0;
thread_local std::vector<TailScope::Item> TailScope::tail_;

void TailScope::run_from(size_t mark) {
  for (size_t i = mark; i < tail_.size(); ++i) {
    const Item item = tail_[i];  // by value: a deferral may grow the vector
    item.fn(item.arg);
  }
  tail_.resize(mark);
}

}  // namespace parley::runtime
