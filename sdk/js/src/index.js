// Parley's JavaScript client SDK: plain ES modules for browsers and Node >= 18.
// See README.md and index.d.ts.
export { ParleyClient } from './client.js';
export { Channel } from './channel.js';
export { ParleyError, RETRYABLE_CODES } from './errors.js';
export { backoffDelay, withJitter } from './backoff.js';
export { bin, binBytes } from './codec.js';
export { applyStateDelta } from './state_streams.js';
export { MessageLog } from './message_log.js';
