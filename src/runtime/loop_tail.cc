#include "runtime/loop_tail.h"

namespace parley::runtime {

constinit thread_local int TailScope::depth_ = 0;
thread_local std::vector<TailScope::Item> TailScope::tail_;

void TailScope::run_tail() {
  // The tail runs as part of the scope: what it defers joins it (depth 1).
  ++depth_;
  for (size_t i = 0; i < tail_.size(); ++i) {
    const Item item = tail_[i];  // by value: a deferral may grow the vector
    item.fn(item.arg);
  }
  tail_.clear();
  --depth_;
}

}  // namespace parley::runtime
