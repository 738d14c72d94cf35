#include "store/dedupe_table.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>

namespace parley::store {
namespace {

uint64_t process_seed() {
  static const uint64_t seed = [] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd() ^ 0x9e3779b97f4a7c15ull;
  }();
  return seed;
}

// Multiply to 128 bits and fold: every input bit reaches every output bit.
inline uint64_t fold(uint64_t a, uint64_t b) {
  const __uint128_t p = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t get_varint(const char*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(*p++);
    v |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t z) { return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1); }

constexpr size_t kUuidText = 36;
constexpr size_t kUuidBytes = 16;
constexpr size_t kMaxPacked = 256;  // longer keys are stored as they are
constexpr uint8_t kRaw = 0, kLowerUuid = 1, kUpperUuid = 2;
constexpr const char* kHexDigits[3] = {nullptr, "0123456789abcdef", "0123456789ABCDEF"};

int hex_value(char c, uint8_t form) {
  if (c >= '0' && c <= '9') return c - '0';
  if (form == kLowerUuid && c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (form == kUpperUuid && c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_dash_at(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// Packs `text` (36 characters) into 16 bytes when it is a canonical UUID of
// `form`'s case.
bool pack_uuid(std::string_view text, uint8_t form, char* out) {
  size_t n = 0;
  for (size_t i = 0; i < kUuidText; ++i) {
    if (is_dash_at(i)) {
      if (text[i] != '-') return false;
      continue;
    }
    const int hi = hex_value(text[i], form);
    const int lo = hex_value(text[++i], form);
    if (hi < 0 || lo < 0) return false;
    out[n++] = static_cast<char>(hi << 4 | lo);
  }
  return true;
}

void unpack_uuid(const char* in, uint8_t form, std::string& out) {
  const char* digits = kHexDigits[form];
  for (size_t b = 0; b < kUuidBytes; ++b) {
    if (b == 4 || b == 6 || b == 8 || b == 10) out.push_back('-');
    const auto v = static_cast<unsigned char>(in[b]);
    out.push_back(digits[v >> 4]);
    out.push_back(digits[v & 0xf]);
  }
}

}  // namespace

class DedupeTable::Packed {
 public:
  explicit Packed(std::string_view key) : stored_{key, kRaw} {
    if (key.size() < kUuidText || key.size() - kUuidText + kUuidBytes > kMaxPacked) return;
    const size_t prefix = key.size() - kUuidText;
    for (uint8_t form : {kLowerUuid, kUpperUuid}) {
      if (!pack_uuid(key.substr(prefix), form, buf_ + prefix)) continue;
      std::memcpy(buf_, key.data(), prefix);
      stored_ = Stored{std::string_view(buf_, prefix + kUuidBytes), form};
      return;
    }
  }
  const Stored& stored() const { return stored_; }

 private:
  Stored stored_;
  char buf_[kMaxPacked];
};

DedupeTable::DedupeTable(int64_t window_ms, HashFn hash)
    : hash_fn_(hash ? hash : &seeded_hash),
      window_ms_(std::max<int64_t>(window_ms, 0)),
      // ~16 buckets per window: an entry outlives its window by at most 1/16.
      bucket_ms_(std::max<int64_t>(window_ms_ / 16, 100)) {}

uint64_t DedupeTable::hash(const Stored& key) const { return hash_fn_(key.bytes) + key.form; }

uint64_t DedupeTable::seeded_hash(std::string_view key) {
  const uint64_t seed = process_seed();
  const char* p = key.data();
  size_t n = key.size();
  uint64_t h = seed ^ fold(n + 1, 0x9e3779b97f4a7c15ull);
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = fold(h ^ w, 0xa0761d6478bd642full ^ seed);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h = fold(h ^ tail, 0xe7037ed1a0b428dbull);
  return fold(h, 0x8ebc6af09c88c6e3ull ^ seed) ^ h;
}

DedupeTable::Stored DedupeTable::record(const Bucket& b, uint32_t offset, uint64_t* seq,
                                        int64_t* ts_ms) {
  const char* p = b.arena.data() + offset;
  const uint64_t zs = get_varint(p);
  const uint64_t zt = get_varint(p);
  if (seq) *seq = b.base_seq + static_cast<uint64_t>(unzigzag(zs));
  if (ts_ms) *ts_ms = b.first_ts + unzigzag(zt);
  const uint64_t len_form = get_varint(p);
  return Stored{{p, static_cast<size_t>(len_form >> 2)}, static_cast<uint8_t>(len_form & 3)};
}

int64_t DedupeTable::locate(const Stored& key, uint64_t h) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t pos = h & mask, n = 0; n < slots_.size(); pos = (pos + 1) & mask, ++n) {
    const Slot& s = slots_[pos];
    if (s.bucket == 0) return -1;
    if (s.tag == tag && live(s) && record(bucket_of(s), s.offset) == key) {
      return static_cast<int64_t>(pos);
    }
  }
  return -1;
}

std::optional<uint64_t> DedupeTable::find(std::string_view raw) const {
  const Packed packed(raw);
  const Stored& key = packed.stored();
  const int64_t at = locate(key, hash(key));
  if (at < 0) return std::nullopt;
  uint64_t seq = 0;
  const Slot& s = slots_[at];
  record(bucket_of(s), s.offset, &seq, nullptr);
  return seq;
}

DedupeTable::Bucket& DedupeTable::bucket_for(int64_t ts_ms) {
  if (buckets_.empty() || ts_ms >= buckets_.back().first_ts + bucket_ms_ ||
      buckets_.back().arena.size() > (uint32_t{1} << 31)) {
    // The bucket being closed takes no more records: give back its growth slack.
    if (!buckets_.empty()) buckets_.back().arena.shrink_to_fit();
    Bucket b;
    b.serial = first_serial_ + static_cast<uint32_t>(buckets_.size());
    b.first_ts = b.last_ts = ts_ms;
    buckets_.push_back(std::move(b));
  }
  return buckets_.back();
}

void DedupeTable::insert(std::string_view raw, uint64_t seq, int64_t ts_ms) {
  const Packed packed(raw);
  const Stored& key = packed.stored();
  const uint64_t h = hash(key);
  if ((used_ + 1) * 5 > slots_.size() * 4) rehash(live_ + 1);

  Bucket& b = bucket_for(ts_ms);
  if (b.arena.empty()) b.base_seq = seq;
  const auto offset = static_cast<uint32_t>(b.arena.size());
  put_varint(b.arena, zigzag(static_cast<int64_t>(seq - b.base_seq)));
  put_varint(b.arena, zigzag(ts_ms - b.first_ts));
  put_varint(b.arena, key.bytes.size() << 2 | key.form);
  b.arena.append(key.bytes);
  b.last_ts = std::max(b.last_ts, ts_ms);
  b.max_seq = std::max(b.max_seq, seq);
  ++b.count;

  const size_t mask = slots_.size() - 1;
  const auto tag = static_cast<uint32_t>(h >> 32);
  int64_t reuse = -1;
  size_t pos = h & mask;
  for (size_t n = 0; n < slots_.size(); pos = (pos + 1) & mask, ++n) {
    Slot& s = slots_[pos];
    if (s.bucket == 0) break;
    if (!live(s)) {
      if (reuse < 0) reuse = static_cast<int64_t>(pos);
    } else if (s.tag == tag && record(bucket_of(s), s.offset) == key) {
      --bucket_of(s).count;
      s.bucket = b.serial;
      s.offset = offset;
      return;
    }
  }
  if (reuse >= 0) {
    pos = static_cast<size_t>(reuse);
  } else {
    ++used_;  // the load check above leaves at least one never-used slot
  }
  slots_[pos] = Slot{tag, b.serial, offset};
  ++live_;
}

bool DedupeTable::erase(std::string_view raw) {
  const Packed packed(raw);
  const Stored& key = packed.stored();
  const int64_t at = locate(key, hash(key));
  if (at < 0) return false;
  Slot& s = slots_[at];
  --bucket_of(s).count;
  s.bucket = kErased;
  --live_;
  return true;
}

void DedupeTable::expire(int64_t now_ms, uint64_t keep_seq) {
  const int64_t cutoff = now_ms - window_ms_;
  size_t drop = 0;
  while (drop < buckets_.size() && buckets_[drop].last_ts < cutoff &&
         buckets_[drop].max_seq < keep_seq) {
    live_ -= buckets_[drop].count;
    ++drop;
  }
  if (drop == 0) return;
  // Move-construct the survivors into a new vector: erase() would move-assign them,
  // and a string move-assigned from a short one keeps its old (large) buffer.
  std::vector<Bucket> rest(std::make_move_iterator(buckets_.begin() + static_cast<ptrdiff_t>(drop)),
                           std::make_move_iterator(buckets_.end()));
  buckets_.swap(rest);
  first_serial_ += static_cast<uint32_t>(drop);
  if (live_ == 0) {
    clear();
  } else if (slots_.size() > 64 && live_ * 8 < slots_.size()) {
    rehash(live_);
  }
}

void DedupeTable::rehash(size_t live_entries) {
  if (live_entries == 0) {
    std::vector<Slot>().swap(slots_);
    used_ = 0;
    return;
  }
  size_t cap = 8;
  while (cap < live_entries * 2) cap *= 2;  // load <= 0.5 after the rehash, 0.8 before the next
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  const size_t mask = cap - 1;
  used_ = 0;
  for (const Slot& s : old) {
    if (!live(s)) continue;
    size_t pos = hash(record(bucket_of(s), s.offset)) & mask;
    while (slots_[pos].bucket != 0) pos = (pos + 1) & mask;
    slots_[pos] = s;
    ++used_;
  }
}

void DedupeTable::for_each(
    const std::function<void(std::string_view key, uint64_t seq, int64_t ts_ms)>& fn) const {
  for (const Slot& s : slots_) {
    if (!live(s)) continue;
    uint64_t seq = 0;
    int64_t ts = 0;
    const Stored key = record(bucket_of(s), s.offset, &seq, &ts);
    if (key.form == kRaw) {
      fn(key.bytes, seq, ts);
      continue;
    }
    std::string text(key.bytes.substr(0, key.bytes.size() - kUuidBytes));
    unpack_uuid(key.bytes.data() + text.size(), key.form, text);
    fn(text, seq, ts);
  }
}

void DedupeTable::clear() {
  // swap, not `= {}`: assigning an empty list keeps the capacity.
  std::vector<Slot>().swap(slots_);
  std::vector<Bucket>().swap(buckets_);
  used_ = live_ = 0;
  first_serial_ = 1;
}

size_t DedupeTable::memory_bytes() const {
  size_t n = slots_.capacity() * sizeof(Slot) + buckets_.capacity() * sizeof(Bucket);
  for (const Bucket& b : buckets_) {
    if (b.arena.capacity() > 15) n += b.arena.capacity() + 1;  // past the inline buffer
  }
  return n;
}

}  // namespace parley::store
