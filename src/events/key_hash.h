// Which hash a topic's keys are partitioned with (PROTOCOL.md: fnv1a_64(key) mod
// partitions). Servers before this record existed started FNV-1a from a wrong
// basis (kParleyPlacementSeed), so a topic they created holds each key's events in the
// partition that basis gives: moving its keys would split a key's events over
// two partitions, out of order. A topic therefore records its hash once, when
// it is first started, as the one record of the store channel
// (tenant, "<topic>\x1fh"): a topic that already holds events and no record
// is an old one and keeps the old basis; every other gets the spec's.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/fnv1a.h"

namespace parley::events {

enum class KeyHash : uint8_t {
  kSpec,    // fnv1a_64 from the standard basis (PROTOCOL.md)
  kLegacy,  // fnv1a_64 from kParleyPlacementSeed: topics created before the record
};

constexpr uint64_t seed_of(KeyHash h) {
  return h == KeyHash::kSpec ? kFnv1a64Basis : kParleyPlacementSeed;
}

// The record's body, and back (nullopt: a record this server does not know,
// e.g. written by a newer one: the topic then refuses to run rather than guess).
std::string_view key_hash_record(KeyHash h);
std::optional<KeyHash> parse_key_hash_record(std::string_view body);

}  // namespace parley::events
