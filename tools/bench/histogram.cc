#include "histogram.h"

#include <algorithm>
#include <cmath>

namespace bench {

uint32_t Histogram::index_of(uint64_t v) {
  constexpr uint64_t kSub = 1ull << kSubBits;
  if (v < kSub) return static_cast<uint32_t>(v);
  int msb = 63 - __builtin_clzll(v);
  if (msb > kMaxBits) return kBuckets - 1;
  int shift = msb - kSubBits;  // >= 0
  uint64_t sub = (v >> shift) & (kSub - 1);
  return static_cast<uint32_t>(((shift + 1) << kSubBits) + sub);
}

uint64_t Histogram::lowest_of(uint32_t index) {
  constexpr uint64_t kSub = 1ull << kSubBits;
  if (index < kSub) return index;
  int shift = int(index >> kSubBits) - 1;
  uint64_t sub = index & (kSub - 1);
  return (kSub | sub) << shift;
}

uint64_t Histogram::width_of(uint32_t index) {
  if (index < (1u << kSubBits)) return 1;
  return 1ull << (int(index >> kSubBits) - 1);
}

void Histogram::merge(const Histogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

void Histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = sum_ = max_ = 0;
}

uint64_t Histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * double(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < uint32_t(kBuckets); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(max_, lowest_of(i) + width_of(i) / 2);
  }
  return max_;
}

std::vector<std::pair<uint32_t, uint64_t>> Histogram::sparse() const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t i = 0; i < uint32_t(kBuckets); ++i)
    if (counts_[i]) out.emplace_back(i, counts_[i]);
  return out;
}

void Histogram::add_sparse(const std::vector<std::pair<uint32_t, uint64_t>>& s,
                           uint64_t max, uint64_t sum) {
  for (auto [i, c] : s) {
    if (i >= uint32_t(kBuckets)) continue;
    counts_[i] += c;
    count_ += c;
  }
  sum_ += sum;
  max_ = std::max(max_, max);
}

}  // namespace bench
