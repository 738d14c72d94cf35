// AppendBox: where the store's completions of one topic's appends wait for the
// topic's loop. The store completes an append on its own thread (the embedded
// store's writer, one call per event); posting each completion to the loop cost
// one Asio operation and one scheduler lock (and often a wake-up) per event.
// The box gathers them instead: the first completion of a round posts one drain
// to the loop (at the end of the store's completion round: completion_round.h),
// later ones only join the queue, and the drain hands every
// completion to its partition in arrival order (so each partition still sees
// its appends complete in submission order).
//
// push() is called from any thread; drain runs on the topic's loop. The box
// lives as long as the topic (the store's callbacks point at it, as they did at
// the partitions).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/loop_group.h"
#include "store/completion_round.h"
#include "store/store.h"

namespace parley::events {

class AppendBox {
 public:
  using Sink = std::function<void(uint32_t part, store::AppendOutcome out)>;

  AppendBox(unsigned loop, runtime::LoopGroup& loops, Sink sink)
      : loop_(loop), loops_(loops), sink_(std::move(sink)) {}
  AppendBox(const AppendBox&) = delete;
  AppendBox& operator=(const AppendBox&) = delete;

  void push(uint32_t part, store::AppendOutcome out) {
    bool post = false;
    {
      std::lock_guard lock(mu_);
      queue_.emplace_back(part, std::move(out));
      post = !posted_;
      posted_ = true;
    }
    // At the end of the store's completion round: one drain for the round.
    if (post) store::CompletionRound::defer([this] { loops_.run_on(loop_, [this] { drain(); }); });
  }

 private:
  void drain() {
    {
      std::lock_guard lock(mu_);
      batch_.swap(queue_);
      posted_ = false;
    }
    for (auto& [part, out] : batch_) sink_(part, std::move(out));
    batch_.clear();  // keeps its capacity for the next round
  }

  unsigned loop_;
  runtime::LoopGroup& loops_;
  Sink sink_;
  std::mutex mu_;
  std::vector<std::pair<uint32_t, store::AppendOutcome>> queue_;  // under mu_
  bool posted_ = false;                                           // under mu_
  std::vector<std::pair<uint32_t, store::AppendOutcome>> batch_;  // the loop's
};

}  // namespace parley::events
