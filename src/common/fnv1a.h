// FNV-1a 64 (http://www.isthe.com/chongo/tech/comp/fnv/), the one hash whose
// values leave the process: PROTOCOL.md makes an event's partition
// fnv1a_64(key) mod partitions, and Valkey keys carry a channel's partition.
// std::hash may differ between builds; this may not. Pure; any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace parley {

// PROTOCOL.md "Event streams and leaderboards": the standard 64-bit offset basis
// and prime.
inline constexpr uint64_t kFnv1a64Basis = 14695981039346656037ull;
inline constexpr uint64_t kFnv1a64Prime = 1099511628211ull;

// The basis with its last digit dropped, which Parley's own placement used from
// the start: a channel's hub shard and its Valkey partition (whose keys name
// it, so changing it would strand stored data), and the partitions of topics
// created before the spec's basis was followed (events/topic_key_hash.h).
// Internal; never a value a client computes.
inline constexpr uint64_t kParleyPlacementSeed = 1469598103934665603ull;

// FNV-1a 64 of `bytes`, starting from `seed`: fnv1a_64(b, fnv1a_64(a)) is the
// hash of a followed by b.
constexpr uint64_t fnv1a_64(std::string_view bytes, uint64_t seed = kFnv1a64Basis) {
  uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv1a64Prime;
  }
  return h;
}

}  // namespace parley
