#include "timers.h"

namespace parley::detail {

TimerId Timers::add(int64_t due_ms, std::function<void()> fn) {
  const TimerId id = next_id_++;
  queue_.emplace(std::make_pair(due_ms, id), std::move(fn));
  due_of_.emplace(id, due_ms);
  return id;
}

void Timers::cancel(TimerId id) {
  auto it = due_of_.find(id);
  if (it == due_of_.end()) return;
  queue_.erase({it->second, id});
  due_of_.erase(it);
}

int Timers::run_due(int64_t now_ms) {
  const TimerId last = next_id_ - 1;
  int ran = 0;
  for (auto it = queue_.begin(); it != queue_.end() && it->first.first <= now_ms;) {
    if (it->first.second > last) {
      ++it;
      continue;
    }
    auto fn = std::move(it->second);
    due_of_.erase(it->first.second);
    queue_.erase(it);
    fn();  // may add or cancel timers: restart from the front
    ++ran;
    it = queue_.begin();
  }
  return ran;
}

int64_t Timers::next_due() const { return queue_.empty() ? -1 : queue_.begin()->first.first; }

void Timers::clear() {
  queue_.clear();
  due_of_.clear();
}

}  // namespace parley::detail
