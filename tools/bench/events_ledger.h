// What the events scenario remembers to audit a run (events.h, redis_streams.h):
// which (partition, offset) pairs were acknowledged or received, compactly
// (a 10-minute hunt-20k acknowledges 21 M events: a byte each, not a map node),
// and the leaderboard recomputed from the acknowledged events.
//
// Thread: not synchronised; the owner holds its own mutex around every call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace bench {

// A set of (p, off), counting how often each was added (up to 255).
class OffsetSet {
 public:
  // Adds one; true the first time.
  bool add(uint32_t p, uint64_t off) {
    uint8_t& c = slot(p, off);
    if (c < 255) ++c;
    if (c == 1) ++distinct_;
    return c == 1;
  }
  bool has(uint32_t p, uint64_t off) const {
    if (p >= parts_.size()) return false;
    auto it = parts_[p].find(off >> kChunkBits);
    return it != parts_[p].end() && (*it->second)[off & kChunkMask] > 0;
  }
  uint64_t distinct() const { return distinct_; }
  // fn(p, off) for every member.
  template <typename Fn>
  void for_each(Fn fn) const {
    for (uint32_t p = 0; p < parts_.size(); ++p) {
      for (const auto& [chunk, bytes] : parts_[p]) {
        for (uint64_t i = 0; i < bytes->size(); ++i) {
          if ((*bytes)[i]) fn(p, (chunk << kChunkBits) | i);
        }
      }
    }
  }

 private:
  static constexpr int kChunkBits = 16;
  static constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;
  using Chunk = std::vector<uint8_t>;
  uint8_t& slot(uint32_t p, uint64_t off) {
    if (p >= parts_.size()) parts_.resize(p + 1);
    auto& c = parts_[p][off >> kChunkBits];
    if (!c) c = std::make_unique<Chunk>(size_t{1} << kChunkBits, 0);
    return (*c)[off & kChunkMask];
  }
  std::vector<std::unordered_map<uint64_t, std::unique_ptr<Chunk>>> parts_;
  uint64_t distinct_ = 0;
};

// The board PROTOCOL.md describes for agg = "sum", order = "desc", recomputed:
// per round, member -> score; ranks with ties sharing the best rank.
struct BoardTally {
  std::map<std::string, std::unordered_map<std::string, double>> rounds;

  void add(const std::string& round, const std::string& member, double points) {
    rounds[round][member] += points;
  }
  // member -> (score, rank) of one round.
  std::unordered_map<std::string, std::pair<double, uint64_t>> ranked(const std::string& round) const {
    std::unordered_map<std::string, std::pair<double, uint64_t>> out;
    auto it = rounds.find(round);
    if (it == rounds.end()) return out;
    std::vector<std::pair<double, const std::string*>> v;
    for (const auto& [m, s] : it->second) v.emplace_back(s, &m);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    });
    uint64_t rank = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i == 0 || v[i].first != v[i - 1].first) rank = i + 1;
      out.emplace(*v[i].second, std::make_pair(v[i].first, rank));
    }
    return out;
  }
};

}  // namespace bench
