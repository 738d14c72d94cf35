// What one component (a hub shard, a topic) hands to the loops: a
// runtime::Inbox of tasks per destination loop.
//
// Tasks sent to one loop run there in the order sent, as one batch per
// drain; a task never overtakes one sent before it, so everything a component
// says to a loop must go through its Outbox (a plain post made after a send
// may run before it: the send can join a batch posted earlier). The batching
// is Inbox's: inside a TailScope, the tasks for the sender's own loop run at
// the scope's end and each other loop gets one post, at the scope's end, for
// everything the scope sent it; outside a scope the first send posts.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/inbox.h"
#include "runtime/loop_group.h"

namespace parley::runtime {

class Outbox {
 public:
  using Task = std::function<void()>;

  explicit Outbox(LoopGroup& loops) {
    boxes_.reserve(loops.size());
    for (unsigned i = 0; i < loops.size(); ++i) {
      boxes_.push_back(std::make_unique<Inbox<Task>>(loops.loop(i), [](std::vector<Task>& batch) {
        for (auto& fn : batch) fn();
      }));
    }
  }

  // Any thread, though a component sends from its own loop.
  void to(unsigned loop, Task fn) { boxes_[loop]->push(std::move(fn)); }

 private:
  std::vector<std::unique_ptr<Inbox<Task>>> boxes_;
};

}  // namespace parley::runtime
