// The server's clock as seen from here (docs/PROTOCOL.md "Time for games"): a
// `pong` carries the server's time `ts`; a ping sent at local t0 and answered
// at t1 gives rtt = t1 - t0 and offset = ts - (t0 + t1) / 2, wrong by at most
// rtt / 2. The estimate is the offset of the sample with the smallest rtt
// among the last few (NTP's rule). Owned by a ParleyClient, on its thread.

/** Samples kept; the best (smallest rtt) of these is the estimate. */
export const CLOCK_SAMPLES = 8;

export class ServerClock {
  #samples = []; // { rtt, offset }, oldest first

  /** A pong's `ts` for a ping sent at t0 and answered at t1 (local ms); false when unusable. */
  sample(t0, t1, ts) {
    if (!Number.isFinite(ts) || !Number.isFinite(t0) || !(t1 >= t0)) return false;
    this.#samples.push({ rtt: t1 - t0, offset: ts - (t0 + t1) / 2 });
    if (this.#samples.length > CLOCK_SAMPLES) this.#samples.shift();
    return true;
  }

  /** { offset, rtt } of the best sample (server time = local time + offset), or null before a pong with ts. */
  get estimate() {
    let best = null;
    for (const s of this.#samples) if (best === null || s.rtt < best.rtt) best = s;
    return best && { offset: best.offset, rtt: best.rtt };
  }
}
