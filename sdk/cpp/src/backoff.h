// Reconnect and retry delays. Jitter spreads a crowd of clients that lost the
// same server at the same moment over the delay instead of stampeding back.
// Pure functions; any thread.
#pragma once

#include <cstdint>

namespace parley::detail {

/// Exponential backoff with equal jitter: for `attempt` (0-based) the delay is
/// uniform in [cap/2, cap], cap = min(max_ms, min_ms * factor^attempt).
/// `u` is a uniform draw in [0, 1).
int64_t backoff_delay(int attempt, int64_t min_ms, int64_t max_ms, double factor, double u);

/// `ms` stretched by up to `fraction` of itself: a server-given delay is a floor.
int64_t with_jitter(int64_t ms, double fraction, double u);

}  // namespace parley::detail
