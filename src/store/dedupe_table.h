// DedupeTable: the dedupe window of one channel, (sender, id) -> seq, compact.
//
// Owned by whoever owns the channel (a hub shard; the memory store under its shard
// lock); not thread-safe.
//
// Why not a map of strings: an unordered_map<string, entry> plus a deque of key
// copies for expiry cost ~370 B per remembered id (two heap strings, a node, a
// bucket pointer, the deque element), and a channel remembers every id of the last
// `dedupe_window_s` (120 s by default: 600,000 ids at 5,000 msg/s).
//
// Layout:
// - An open-addressing array of 12-byte slots (linear probing, load 0.25-0.8):
//   32 bits of the key's hash, the time bucket holding the entry, and the entry's
//   offset in that bucket's arena.
// - Time buckets, each a contiguous arena of records `varint(zigzag(seq - base))
//   varint(zigzag(ts - bucket start)) varint(len) key`. An id lives in the bucket of its insert time; a bucket is
//   dropped whole once its newest entry is older than the window, so expiry costs
//   nothing per entry. Slots that point into a dropped bucket are dead: probes step
//   over them, inserts reuse them, and a rehash (on growth, or when the table has
//   shrunk to an eighth) leaves them out.
//
// Exact match: the hash only selects candidates. A candidate counts as a hit only
// when the full key stored in its arena equals the key asked for, so two ids with
// the same hash are two entries and a collision can never answer `dup` for a
// different message. The keys are kept in memory rather than confirmed by reading
// the store on a hit because the store's message may already be trimmed from
// history while its id is still inside the window, and a hit must be answered
// without a blocking read on the shard's loop.
//
// Compact keys: a key that ends in a UUID in its canonical text form (36
// characters, 8-4-4-4-12 hex digits, all lowercase or all uppercase: what
// crypto.randomUUID(), Java, .NET and Swift print) is stored with those 36
// characters as their 16 bytes, the form noted in the record's length field.
// The stored form is a function of the key (one key, one form), so comparing
// stored forms is comparing keys: exact match holds. Client message ids are
// UUIDs more often than anything else, and they were most of a record's bytes.
//
// Cost: ~21 B of slot (12 B at an average load of ~0.6) + a record of ~4 + key
// bytes (DedupeKey: 1 + sender + id, a UUID counting 16). Measured in
// dedupe_table_bench.
//
// Hashing is seeded per process, so ids chosen to collide cannot be precomputed
// to turn probes linear.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/dedupe_key.h"

namespace parley::store {

class DedupeTable {
 public:
  using HashFn = uint64_t (*)(std::string_view);
  // window_ms: an entry is remembered at least this long after its ts. `hash`
  // replaces the seeded hash (tests force collisions with it).
  explicit DedupeTable(int64_t window_ms, HashFn hash = nullptr);

  std::optional<uint64_t> find(const DedupeKey& key) const { return find(key.bytes()); }
  std::optional<uint64_t> find(std::string_view key) const;

  // Remembers key -> seq as of ts_ms; replaces an entry of the same key. ts_ms
  // should not decrease between calls (an older ts joins the newest bucket, which
  // only keeps it longer).
  void insert(const DedupeKey& key, uint64_t seq, int64_t ts_ms) {
    insert(key.bytes(), seq, ts_ms);
  }
  void insert(std::string_view key, uint64_t seq, int64_t ts_ms);

  bool erase(const DedupeKey& key) { return erase(key.bytes()); }
  bool erase(std::string_view key);

  // Drops the buckets whose newest entry is older than now_ms - window, oldest
  // first, stopping at a bucket that holds a seq >= keep_seq (entries still being
  // written stay answerable however old).
  void expire(int64_t now_ms, uint64_t keep_seq = UINT64_MAX);

  // Every live entry with the seq and ts it was inserted with.
  void for_each(const std::function<void(std::string_view key, uint64_t seq, int64_t ts_ms)>& fn) const;

  void clear();
  size_t size() const { return live_; }
  // Heap bytes held: slot array and arenas (capacity, not size).
  size_t memory_bytes() const;

  // The seeded hash of the table's keys (DedupeIndex's fingerprints too).
  static uint64_t seeded_hash(std::string_view key);

 private:
  struct Slot {
    uint32_t tag = 0;     // high 32 bits of the hash
    uint32_t bucket = 0;  // serial of the bucket; 0: never used; kErased: erased
    uint32_t offset = 0;  // record offset in that bucket's arena
  };
  struct Bucket {
    uint32_t serial = 0;
    uint32_t count = 0;   // live slots pointing here
    int64_t first_ts = 0;
    int64_t last_ts = 0;
    uint64_t base_seq = 0;
    uint64_t max_seq = 0;
    std::string arena;
  };
  static constexpr uint32_t kErased = UINT32_MAX;

  // A key as a record stores it: its bytes, and how they were packed (0: as
  // they are; 1 and 2: a trailing lowercase / uppercase UUID as 16 bytes).
  struct Stored {
    std::string_view bytes;
    uint8_t form = 0;
    bool operator==(const Stored&) const = default;
  };
  class Packed;  // a key's Stored form, with the buffer it needs

  uint64_t hash(const Stored& key) const;
  bool live(const Slot& s) const {
    return s.bucket != 0 && s.bucket != kErased && s.bucket >= first_serial_;
  }
  Bucket& bucket_of(const Slot& s) { return buckets_[s.bucket - first_serial_]; }
  const Bucket& bucket_of(const Slot& s) const { return buckets_[s.bucket - first_serial_]; }
  // The record at `offset`: its key, and its seq and ts when asked.
  static Stored record(const Bucket& b, uint32_t offset, uint64_t* seq = nullptr,
                       int64_t* ts_ms = nullptr);
  // Index of the live slot holding `key`, or -1.
  int64_t locate(const Stored& key, uint64_t h) const;
  Bucket& bucket_for(int64_t ts_ms);
  void rehash(size_t live_entries);

  HashFn hash_fn_;
  int64_t window_ms_;
  int64_t bucket_ms_;
  std::vector<Slot> slots_;     // size 0 or a power of two
  size_t used_ = 0;             // slots ever written since the last rehash (live + dead)
  size_t live_ = 0;
  std::vector<Bucket> buckets_;  // oldest first; serials first_serial_, +1, ...
  uint32_t first_serial_ = 1;
};

}  // namespace parley::store
