// State deltas (docs/PROTOCOL.md "State deltas"), the client's rule: per
// stream id (`sid`, one connection's) the channel, sender and key of its last
// full frame and the base body; an `sd` frame is the base minus `unset`, plus
// the delta's top-level fields, and reaches the application as the `state`
// it stands for. Nothing is ever invented: an `sd` whose stream or base is
// unknown, or that is malformed, is refused (`take` says why) and the caller
// re-joins the channel, which makes the server send full bodies again.
//
// One table per connection (sids are a connection's), owned by its
// ParleyClient on the host's JavaScript thread.

/** Streams kept per connection; past it the least recently used is forgotten. */
export const MAX_STREAMS = 65536;

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
}

// As `o[k] = v`, but an own property even for "__proto__" (a JSON key like any other).
function put(o, k, v) {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/**
 * The applied body: `base` without the keys of `unset`, then every field of
 * `set`. A new object; `base` is not changed. Throws a TypeError when `base`
 * or `set` is not an object or `unset` is not an array of strings.
 */
export function applyStateDelta(base, set, unset) {
  if (!isPlainObject(base)) throw new TypeError('the base is not an object');
  if (!isPlainObject(set)) throw new TypeError('the delta body is not an object');
  if (unset !== undefined && !(Array.isArray(unset) && unset.every((k) => typeof k === 'string'))) {
    throw new TypeError('unset is not an array of strings');
  }
  const out = {};
  for (const k of Object.keys(base)) put(out, k, base[k]);
  for (const k of unset ?? []) delete out[k];
  for (const k of Object.keys(set)) put(out, k, set[k]);
  return out;
}

/**
 * PROTOCOL.md "Batched state deltas": the `sd` frames an `sds` stands for, in
 * order ({ entries }), or { error } when the frame is not of that shape (then
 * none of it is to be applied).
 */
export function sdsEntries(frame) {
  const d = frame?.d;
  if (!Array.isArray(d) || d.length === 0 || d.length % 2 !== 0) {
    return { error: 'an sds frame whose d is not a non-empty array of sid, value pairs' };
  }
  const entries = [];
  for (let i = 0; i < d.length; i += 2) {
    const sid = d[i];
    const v = d[i + 1];
    if (!Number.isSafeInteger(sid) || sid <= 0) return { error: `an sds entry whose sid is ${JSON.stringify(sid)}` };
    const sd = { op: 'sd', sid };
    if (frame.tick !== undefined) sd.tick = frame.tick;
    if (frame.ts !== undefined) sd.ts = frame.ts;
    if (isPlainObject(v)) {
      sd.body = v;
    } else if (Array.isArray(v) && (v.length === 2 || v.length === 3)) {
      const [pos, body, unset] = v;
      if (pos !== null && !Array.isArray(pos)) return { error: `an sds entry of stream ${sid} whose pos is not an array or null` };
      if (!isPlainObject(body)) return { error: `an sds entry of stream ${sid} whose body is not an object` };
      if (v.length === 3 && !(Array.isArray(unset) && unset.every((k) => typeof k === 'string'))) {
        return { error: `an sds entry of stream ${sid} whose unset is not an array of strings` };
      }
      if (pos !== null) sd.pos = pos;
      sd.body = body;
      if (v.length === 3) sd.unset = unset;
    } else {
      return { error: `an sds entry of stream ${sid} that is neither a body nor [pos, body(, unset)]` };
    }
    entries.push(sd);
  }
  return { entries };
}

export class StateStreams {
  #streams = new Map(); // sid -> { ch, from, key, base }, least recently used first

  get size() {
    return this.#streams.size;
  }

  /** A new connection: every sid of the old one is meaningless. */
  clear() {
    this.#streams.clear();
  }

  /**
   * The channel was left or is re-joined: its streams' bases are dropped (the
   * server sends full bodies after a join). The sids are kept, so an `sd` the
   * server sent before it saw the leave is known as stale (`take`), not as a
   * lost track.
   */
  forget(ch) {
    for (const s of this.#streams.values()) if (s.ch === ch) s.base = null;
  }

  /** A full `state` frame that carries a sid: its body is the stream's base. */
  full(frame) {
    const { sid } = frame;
    if (!Number.isSafeInteger(sid) || sid <= 0) return;
    this.#streams.delete(sid);
    if (!isPlainObject(frame.body)) return; // nothing a delta could apply to
    this.#streams.set(sid, { ch: frame.ch, from: frame.from, key: frame.key, base: { ...frame.body } });
    if (this.#streams.size > MAX_STREAMS) this.#streams.delete(this.#streams.keys().next().value);
  }

  /**
   * An `sd` frame: { state } (the frame the application gets, a new object),
   * { stale, ch } (a stream whose base was dropped by `forget`), or
   * { error, ch } (ch: the stream's channel where the sid is known).
   */
  take(sd) {
    const { sid } = sd;
    const s = Number.isSafeInteger(sid) ? this.#streams.get(sid) : undefined;
    if (!s) return { error: `an sd frame for stream ${JSON.stringify(sid)}, which this connection does not know` };
    if (s.base === null) return { stale: true, ch: s.ch };
    let body;
    try {
      body = applyStateDelta(s.base, sd.body, sd.unset);
    } catch (err) {
      s.base = null; // no longer to be trusted; the re-join's full body replaces it
      return { error: `a malformed sd frame for stream ${sid}: ${err.message}`, ch: s.ch };
    }
    // The application may keep (or change) what it is given: the base is a copy.
    s.base = { ...body };
    this.#streams.delete(sid);
    this.#streams.set(sid, s);
    const state = { op: 'state', ch: s.ch, from: s.from, key: s.key, sid, body };
    if (sd.pos !== undefined) state.pos = sd.pos;
    if (sd.tick !== undefined) state.tick = sd.tick;
    if (sd.ts !== undefined) state.ts = sd.ts;
    return { state };
  }
}
