// Reconnect and retry delays. Jitter spreads a crowd of clients that lost the
// same server at the same moment over the delay instead of stampeding back.

/**
 * Exponential backoff with "equal jitter": the delay for `attempt` (0-based) is
 * uniformly drawn from [cap/2, cap], cap = min(maxMs, minMs * factor^attempt).
 */
export function backoffDelay(attempt, { minMs, maxMs, factor }, random = Math.random) {
  const cap = Math.min(maxMs, minMs * factor ** Math.min(attempt, 30));
  return Math.round(cap / 2 + (random() * cap) / 2);
}

/** `ms` stretched by up to `fraction` of itself: a server-given delay is a floor. */
export function withJitter(ms, fraction, random = Math.random) {
  return Math.round(ms + random() * ms * fraction);
}
