// Log-bucketed latency histogram (HDR-style), written small on purpose: the bench
// needs record(), merge(), percentiles and a sparse dump for --procs merging and
// per-second charts, and nothing else. HdrHistogram_c is not packaged in Debian 12.
//
// Values are nanoseconds. Below 2^kSubBits they are exact; above, each power of two
// is split into 2^kSubBits linear sub-buckets, so a reported value is within
// 1/2^kSubBits (1.6 %) of the true one. Values past 2^kMaxBits (~18 min) clamp.
//
// Thread: not synchronised; each worker owns its own and the runner merges copies.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bench {

class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kMaxBits = 40;
  static constexpr int kBuckets = (kMaxBits - kSubBits + 2) << kSubBits;

  Histogram() : counts_(kBuckets, 0) {}

  void record(int64_t value_ns) {
    uint64_t v = value_ns < 0 ? 0 : static_cast<uint64_t>(value_ns);
    ++counts_[index_of(v)];
    ++count_;
    sum_ += v;
    if (v > max_) max_ = v;
  }
  void merge(const Histogram& other);
  void reset();

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
  // Value at percentile p (0..100]: the midpoint of the bucket holding that rank,
  // capped by the exact max. 0 when empty.
  uint64_t percentile(double p) const;

  // Sparse form (bucket, count) of the non-empty buckets, for samples and --procs.
  std::vector<std::pair<uint32_t, uint64_t>> sparse() const;
  void add_sparse(const std::vector<std::pair<uint32_t, uint64_t>>& s, uint64_t max,
                  uint64_t sum);
  uint64_t sum() const { return sum_; }

  static uint32_t index_of(uint64_t v);
  static uint64_t lowest_of(uint32_t index);
  static uint64_t width_of(uint32_t index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace bench
