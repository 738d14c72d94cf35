// A gate for work in flight (Seastar's gate): each unit of work enters and
// leaves; close() stops new work from entering and calls back once the last
// unit has left. Stop sequences wait on it instead of polling a count.
//
// Any thread. The count is one atomic, so enter/leave cost one atomic RMW on
// the hot path; the waiter is taken under a mutex, only at close and at the
// last leave after it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>

namespace parley::runtime {

class Gate {
 public:
  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Enters unless the gate is closed. A true return must be paired with leave().
  bool try_enter();
  void leave();

  // Refuses every later try_enter() and runs `on_empty` once nothing is
  // inside: here at once if the gate is empty, else on the thread of the last
  // leave(). Once per gate; `on_empty` must not destroy the gate.
  void close(std::function<void()> on_empty);

  bool is_closed() const { return closed_.load(); }
  size_t count() const { return count_.load(std::memory_order_relaxed); }

  // RAII: enters at construction (check it), leaves at destruction.
  class Holder {
   public:
    explicit Holder(Gate& g) : gate_(g.try_enter() ? &g : nullptr) {}
    Holder(Holder&& o) noexcept : gate_(o.gate_) { o.gate_ = nullptr; }
    Holder& operator=(Holder&&) = delete;
    ~Holder() {
      if (gate_) gate_->leave();
    }
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    Gate* gate_;
  };

 private:
  void fire();

  std::atomic<size_t> count_{0};
  std::atomic<bool> closed_{false};
  std::mutex mu_;
  std::function<void()> on_empty_;  // guarded by mu_
};

}  // namespace parley::runtime
