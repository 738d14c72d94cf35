// CompletionRound: a store thread that completes appends in rounds (the
// embedded store's writer runs a whole group commit's callbacks at once) marks
// the round, and a callback may defer work to its end. events::AppendBox posts
// its drain to the topic's loop that way: once per round, after every
// completion of the round is queued, instead of at the round's first
// completion, when the loop woke and drained the first few while the writer
// was still pushing the rest (several wake-ups, drains and delivery passes per
// round, and the box's lock contended).
//
// Thread-local: a round is the calling thread's. Outside a round (stores that
// complete one append at a time) defer() runs the work at once.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace parley::store {

class CompletionRound {
 public:
  CompletionRound() : outer_(current_) { current_ = this; }
  ~CompletionRound() {
    current_ = outer_;
    for (auto& fn : deferred_) fn();
  }
  CompletionRound(const CompletionRound&) = delete;
  CompletionRound& operator=(const CompletionRound&) = delete;

  // Runs `fn` when the calling thread's current round ends, or now if none.
  static void defer(std::function<void()> fn) {
    if (current_ != nullptr) {
      current_->deferred_.push_back(std::move(fn));
      return;
    }
    fn();
  }

 private:
  inline static thread_local CompletionRound* current_ = nullptr;
  CompletionRound* outer_;
  std::vector<std::function<void()>> deferred_;
};

}  // namespace parley::store
