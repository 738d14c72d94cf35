// Errors the SDK reports: the server's error codes (PROTOCOL.md "Errors") plus
// a few of its own: `timeout`, `disconnected`, `closed`, `left`, `bad_frame`.

/** Codes after which the same request may succeed later (after `retry_ms`). */
export const RETRYABLE_CODES = new Set(['rate_limited', 'backpressure', 'unavailable']);

export class ParleyError extends Error {
  /**
   * @param {string} code  a PROTOCOL.md error code or one of the SDK's own
   * @param {string} message
   * @param {number} [retryMs]
   */
  constructor(code, message, retryMs) {
    super(message || code);
    this.name = 'ParleyError';
    this.code = code;
    if (retryMs !== undefined) this.retryMs = retryMs;
  }

  get retryable() {
    return RETRYABLE_CODES.has(this.code);
  }

  /** From a server `error` frame. */
  static from(obj) {
    return new ParleyError(obj.code ?? 'internal', obj.msg ?? '', obj.retry_ms);
  }
}
