// What a scrape reads of one topic: events committed, each partition's end and
// each group's committed offsets. Written on the topic's loop, read by a scrape
// on any thread: the counters are relaxed atomics, the group offsets (written
// per commit, not per event) sit behind a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace parley::events {

struct TopicStats {
  TopicStats(std::string label, uint32_t partitions) : label(std::move(label)), ends(partitions) {}

  const std::string label;  // "tenant/topic"
  std::atomic<uint64_t> committed{0};           // events acknowledged (duplicates excluded)
  std::vector<std::atomic<uint64_t>> ends;      // per partition: last acknowledged offset

  void set_group_offset(const std::string& group, uint32_t p, std::optional<uint64_t> off) {
    std::lock_guard lock(mu_);
    auto& v = groups_[group];
    v.resize(ends.size());
    v[p] = off;
  }
  void set_group_offsets(const std::string& group, const std::vector<std::optional<uint64_t>>& offs) {
    std::lock_guard lock(mu_);
    groups_[group] = offs;
  }
  // fn(group, p, lag): the partition's end minus the group's committed offset.
  template <typename Fn>
  void for_each_lag(Fn fn) const {
    std::lock_guard lock(mu_);
    for (const auto& [g, offs] : groups_) {
      for (uint32_t p = 0; p < ends.size() && p < offs.size(); ++p) {
        const uint64_t end = ends[p].load(std::memory_order_relaxed);
        const uint64_t done = offs[p].value_or(0);
        fn(g, p, end > done ? end - done : 0);
      }
    }
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::optional<uint64_t>>> groups_;
};

}  // namespace parley::events
