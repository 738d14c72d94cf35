#include "runtime/gate.h"

namespace parley::runtime {

// Ordering: both sides use sequentially consistent operations, so of a close()
// (store closed, then load count) racing the last leave() (decrement count,
// then load closed), at least one sees the other's write and calls fire();
// fire() hands the waiter out once.

bool Gate::try_enter() {
  if (closed_.load()) return false;
  count_.fetch_add(1);
  if (closed_.load()) {  // closed in between: back out (may be the last one out)
    leave();
    return false;
  }
  return true;
}

void Gate::leave() {
  if (count_.fetch_sub(1) == 1 && closed_.load()) fire();
}

void Gate::close(std::function<void()> on_empty) {
  {
    std::lock_guard lock(mu_);
    on_empty_ = std::move(on_empty);
  }
  closed_.store(true);
  if (count_.load() == 0) fire();
}

void Gate::fire() {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    fn.swap(on_empty_);
  }
  if (fn) fn();
}

}  // namespace parley::runtime
