// Policy every Store implementation shares, so the conformance suite can assert it.
//
// History: a store keeps at least history_keep(limit) latest messages of a channel
// (never fewer than one, so the channel's last seq stays readable) and trims only
// once history_slack(limit) more have piled up: deleting in steps keeps the cost of
// trimming off the per-message path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace parley::store {

inline uint64_t history_keep(uint32_t limit) { return std::max<uint64_t>(limit, 1); }
inline uint64_t history_slack(uint32_t limit) { return std::max<uint64_t>(64, limit / 8); }
// Upper bound on what a channel holds between trims.
inline uint64_t history_max_held(uint32_t limit) {
  return history_keep(limit) + history_slack(limit);
}

// Sequencing is the hub's job; an append whose seq is not above the channel's last
// is a caller bug. Every store rejects it (kInternal, nothing written) rather than
// overwrite history; it does not fail the store.
inline constexpr std::string_view kStaleSeqMessage =
    "store: append with a seq not above the channel's last";

}  // namespace parley::store
