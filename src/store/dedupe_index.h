// DedupeIndex: the dedupe window of one topic partition, holding no keys: per
// remembered id, a 32-bit tag of its DedupeKey's fingerprint and its offset.
//
// Why not DedupeTable (dedupe_table.h), which channels keep: it holds every key
// (~42 B per id for 15-byte keys, ~57 B for UUID ids), and a partition remembers
// every id of the last `dedupe_window_s` (100,000 events/s over 120 s: 12 million
// ids, half a gigabyte). A partition's log can answer what a channel's window
// cannot: every event of the window is in it, at its offset, until retention
// removes it (docs/operations.md: give a topic a retention that covers its dedupe
// window). So the index keeps only the fingerprint and the offset, and a hit is a
// candidate, never an answer: the owner reads the event at that offset and
// compares the whole key (events/partition.cc). Two ids with one fingerprint are
// two entries, and a candidate whose event is another one, or gone, is no
// duplicate: a collision can cost a read, never a distinct event.
//
// Layout: an open-addressing array of 8-byte slots (linear probing, load
// 0.65-0.85, any multiple of 8 slots): the tag (the 64-bit fingerprint folded to
// 32 bits) and the offset as 32 bits above a base (`base_`, moved when a rehash
// meets an offset 2^32 above it). The tag also places the slot (scaled to the
// array's size it is the home position, so a rehash needs nothing else), so two
// ids of one home are told apart by the tag's other 32 - log2(slots) bits only:
// ids held / 2^32 false candidates per lookup, ~load / 2^14 at 2^18 slots
// (dedupe_index_test, dedupe_table_bench BM_DedupeIndexFalseHits). A
// false candidate costs its owner one read, never an event; the 4 bytes saved per
// slot are a third of the window (12-byte slots with the whole fingerprint were
// 21 B per id with the load, these 14). Expiry by time as
// DedupeTable's: offsets grow with time in a log, so each time bucket (1/16 of the
// window) is only a range of offsets; a bucket is dropped whole once its newest
// entry is older than the window, which raises the floor below which slots are
// dead (probes step over them, inserts reuse them, a rehash leaves them out).
//
// Cost: 8 B of slot at a load of 0.65-0.85 (9.4-12.3 B per id), whatever the
// key, growing or full: a rehash sizes the array to the live entries (dead ones
// are left out), it does not double it.
// Measured in dedupe_table_bench (BM_DedupeIndex).
//
// Owned by one partition's loop; not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "store/dedupe_key.h"

namespace parley::store {

class DedupeIndex {
 public:
  using HashFn = uint64_t (*)(std::string_view);
  // window_ms: an entry is remembered at least this long after its ts.
  explicit DedupeIndex(int64_t window_ms);

  // The fingerprint of `key`: a seeded 64-bit hash (DedupeTable's), or the
  // function set_hash() gave (tests force collisions with it).
  uint64_t fingerprint(const DedupeKey& key) const { return hash_(key.bytes()); }
  // The same, of a key's bytes (DedupeKey::append).
  uint64_t fingerprint(std::string_view key_bytes) const { return hash_(key_bytes); }
  void set_hash(HashFn hash);
  // The function fingerprint() applies (a recovery hashes ids with it: Store::recover_marks).
  HashFn hash() const { return hash_; }

  // The offset of every entry whose fingerprint has `fp`'s tag in the window,
  // into `out` (cleared first): candidates to confirm (each entry of `fp`, and
  // rarely another).
  void find(uint64_t fp, std::vector<uint64_t>& out) const;

  // Remembers (fp, seq) as of ts_ms. A log's order: `seq` above every seq
  // inserted before (one that is not joins the bucket of its offset; one below
  // the expired floor is not kept).
  void insert(uint64_t fp, uint64_t seq, int64_t ts_ms);
  // Forgets the entry (fp, seq) (an append that failed); false when absent.
  bool erase(uint64_t fp, uint64_t seq);

  // Drops the buckets whose newest entry is older than now_ms - window, oldest
  // first, stopping at a bucket that holds a seq >= keep_seq (entries still being
  // written stay answerable however old).
  void expire(int64_t now_ms, uint64_t keep_seq = UINT64_MAX);

  void clear();
  size_t size() const { return live_; }
  // Heap bytes held: slot array and buckets (capacity, not size).
  size_t memory_bytes() const;

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t rel = 0;  // seq - base_ + 1; 0: never used; kErased: erased
  };
  static_assert(sizeof(Slot) == 8);
  // A time bucket: the seqs from first_seq up to the next bucket's first_seq.
  struct Bucket {
    int64_t first_ts = 0;
    int64_t last_ts = 0;
    uint64_t first_seq = 0;
    uint64_t count = 0;  // live entries in it
  };
  static constexpr uint32_t kErased = UINT32_MAX;
  // Load bounds (used slots / slots): a rehash above kMaxLoad, to kRehashLoad.
  static constexpr size_t kMaxLoadNum = 17, kMaxLoadDen = 20;     // 0.85
  static constexpr size_t kRehashLoadNum = 13, kRehashLoadDen = 20;  // 0.65

  // Both halves of the fingerprint feed the tag (a test's small fingerprints stay apart).
  static uint32_t tag_of(uint64_t fp) { return static_cast<uint32_t>(fp ^ (fp >> 32)); }
  uint64_t seq_of(const Slot& s) const { return base_ + s.rel - 1; }
  // A tag's home slot: the tag scaled to the array's size (any size, not only a
  // power of two), after a multiply that spreads small tags (tests') apart.
  size_t home(uint32_t tag) const {
    return static_cast<size_t>((uint64_t{tag * 0x9e3779b1u} * slots_.size()) >> 32);
  }
  size_t next(size_t pos) const { return pos + 1 == slots_.size() ? 0 : pos + 1; }
  bool live(const Slot& s) const { return s.rel != 0 && s.rel != kErased && seq_of(s) >= floor_; }
  // The bucket holding `seq` (buckets_ not empty, seq >= its first).
  Bucket& bucket_of(uint64_t seq);
  // New slot array for `live_entries`, its offsets above `base`.
  void rehash(size_t live_entries, uint64_t base);

  HashFn hash_;
  int64_t window_ms_;
  int64_t bucket_ms_;
  std::vector<Slot> slots_;  // size 0 or a multiple of 8
  size_t used_ = 0;          // slots ever written since the last rehash (live + dead)
  size_t live_ = 0;
  uint64_t base_ = 0;
  uint64_t floor_ = 0;       // entries below this seq have expired
  uint64_t last_seq_ = 0;    // highest seq inserted
  std::vector<Bucket> buckets_;  // oldest first
};

}  // namespace parley::store
