#include "store/dedupe_index.h"

#include <algorithm>

#include "store/dedupe_table.h"

namespace parley::store {

DedupeIndex::DedupeIndex(int64_t window_ms)
    : hash_(&DedupeTable::seeded_hash),
      window_ms_(std::max<int64_t>(window_ms, 0)),
      // ~16 buckets per window, as DedupeTable's: an entry outlives its window by at most 1/16.
      bucket_ms_(std::max<int64_t>(window_ms_ / 16, 100)) {}

void DedupeIndex::set_hash(HashFn hash) { hash_ = hash ? hash : &DedupeTable::seeded_hash; }

void DedupeIndex::find(uint64_t fp, std::vector<uint64_t>& out) const {
  out.clear();
  if (slots_.empty()) return;
  const uint32_t tag = tag_of(fp);
  // The load bound leaves a never-used slot in every chain.
  for (size_t pos = home(tag); slots_[pos].rel != 0; pos = next(pos)) {
    const Slot& s = slots_[pos];
    if (live(s) && s.tag == tag) out.push_back(seq_of(s));
  }
}

DedupeIndex::Bucket& DedupeIndex::bucket_of(uint64_t seq) {
  auto it = std::upper_bound(buckets_.begin(), buckets_.end(), seq,
                             [](uint64_t s, const Bucket& b) { return s < b.first_seq; });
  return it == buckets_.begin() ? buckets_.front() : *std::prev(it);
}

void DedupeIndex::insert(uint64_t fp, uint64_t seq, int64_t ts_ms) {
  if (seq < floor_) return;
  if (live_ == 0) clear();  // nothing to keep: the offsets start again here
  if (slots_.empty()) {
    base_ = seq;
  } else if (seq < base_ || seq - base_ >= kErased - 1) {
    // The 32-bit offsets need a lower base: the lowest a live entry can have.
    const uint64_t lowest = std::min(seq, floor_ > base_ ? floor_ : base_);
    if (std::max(seq, last_seq_) - lowest < kErased - 1) {
      rehash(live_ + 1, lowest);
    } else {
      // Offsets jumped by more than 2^32 inside one window (a start that
      // accepted data loss): the window before the jump is forgotten.
      clear();
      base_ = seq;
    }
  }
  if (buckets_.empty() || (seq > last_seq_ && ts_ms >= buckets_.back().first_ts + bucket_ms_)) {
    buckets_.push_back(Bucket{ts_ms, ts_ms, seq, 0});
  }
  Bucket& b = seq > last_seq_ ? buckets_.back() : bucket_of(seq);
  b.last_ts = std::max(b.last_ts, ts_ms);
  ++b.count;
  last_seq_ = std::max(last_seq_, seq);

  if ((used_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) rehash(live_ + 1, base_);
  const uint32_t tag = tag_of(fp);
  size_t pos = home(tag);
  // Entries are never replaced (one tag may be several ids): the first slot
  // that holds nothing live takes it.
  while (live(slots_[pos])) pos = next(pos);
  if (slots_[pos].rel == 0) ++used_;
  slots_[pos] = Slot{tag, static_cast<uint32_t>(seq - base_ + 1)};
  ++live_;
}

bool DedupeIndex::erase(uint64_t fp, uint64_t seq) {
  if (slots_.empty()) return false;
  const uint32_t tag = tag_of(fp);
  for (size_t pos = home(tag); slots_[pos].rel != 0; pos = next(pos)) {
    Slot& s = slots_[pos];
    if (!live(s) || s.tag != tag || seq_of(s) != seq) continue;
    s.rel = kErased;
    --live_;
    --bucket_of(seq).count;
    return true;
  }
  return false;
}

void DedupeIndex::expire(int64_t now_ms, uint64_t keep_seq) {
  const int64_t cutoff = now_ms - window_ms_;
  size_t drop = 0;
  while (drop < buckets_.size() && buckets_[drop].last_ts < cutoff) {
    // One past the bucket's highest seq.
    const uint64_t end = drop + 1 < buckets_.size() ? buckets_[drop + 1].first_seq : last_seq_ + 1;
    if (end > keep_seq) break;
    floor_ = std::max(floor_, end);
    live_ -= std::min<size_t>(live_, buckets_[drop].count);
    ++drop;
  }
  if (drop == 0) return;
  buckets_.erase(buckets_.begin(), buckets_.begin() + static_cast<std::ptrdiff_t>(drop));
  if (live_ == 0) {
    clear();
  } else if (slots_.size() > 64 && live_ * 4 < slots_.size()) {
    rehash(live_, base_);
  }
}

void DedupeIndex::rehash(size_t live_entries, uint64_t base) {
  // Sized to the entries, not to a power of two: a load of 0.65 after the
  // rehash, 0.85 before the next, whether the window grows (x1.3 each time) or
  // is full and expiring (the same size again: the dead slots go, the live fit).
  // Doubling left it anywhere in 0.4-0.8 growing, and 0.25-0.5 once full (a
  // rehash met as many dead slots as live ones and doubled anyway).
  const size_t cap = std::max<size_t>(8, (live_entries * kRehashLoadDen / kRehashLoadNum + 7) & ~size_t{7});
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  used_ = 0;
  for (const Slot& s : old) {
    if (!live(s)) continue;
    size_t pos = home(s.tag);
    while (slots_[pos].rel != 0) pos = next(pos);
    slots_[pos] = Slot{s.tag, static_cast<uint32_t>(seq_of(s) - base + 1)};
    ++used_;
  }
  base_ = base;
}

void DedupeIndex::clear() {
  // swap, not `= {}`: assigning an empty list keeps the capacity.
  std::vector<Slot>().swap(slots_);
  std::vector<Bucket>().swap(buckets_);
  used_ = live_ = 0;
  base_ = floor_ = last_seq_ = 0;
}

size_t DedupeIndex::memory_bytes() const {
  return slots_.capacity() * sizeof(Slot) + buckets_.capacity() * sizeof(Bucket);
}

}  // namespace parley::store
