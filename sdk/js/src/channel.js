// Channel: the application's view of one channel. It remembers the last seq
// it delivered, so a rejoin after a drop asks for exactly what was missed
// (`since`), drops what it already delivered, and repairs a gap in the seq
// stream from `history` before delivering anything newer. Publishes wait in a
// FIFO until the channel is joined and are resent with their client id after
// a drop or a retryable error. `state` is latest-wins per key and resent after
// a rejoin, so other members see an avatar again once it is back.
//
// Runs on the host's JavaScript thread, driven by its ParleyClient.
import { Emitter } from './emitter.js';
import { ParleyError, RETRYABLE_CODES } from './errors.js';

const MAX_UP_QUEUE = 10000; // `up`s held while not joined
const MAX_TRACKED_RIDS = 1024; // fire-and-forget rids remembered for their errors
const HISTORY_PAGE = 1000; // PROTOCOL.md caps history at 1000 per request
const MAX_FAILED_PAGES = 3; // failed repair reads in a row before a gap

function remember(map, rid, value) {
  map.set(rid, value);
  if (map.size > MAX_TRACKED_RIDS) map.delete(map.keys().next().value);
}

export class Channel extends Emitter {
  #client;
  #name;
  #want = false; // the application asked to be a member
  #status = 'idle'; // idle | joining | joined
  #joinGen = 0;
  #lastSeq = null; // the last seq delivered to the application
  #joinWaiters = [];
  #members = new Set();
  #publishes = []; // FIFO of publish entries
  #states = new Map(); // key -> { body, dirty, lastSent, holdUntil, timer }
  #stateRids = new Map(); // rid -> key
  #ups = []; // bodies waiting for a joined channel
  #upRids = new Map(); // rid -> body
  #repairing = false;
  #repairGen = 0; // a repair's page after a leave or reset is ignored
  #buffer = []; // msgs newer than a gap, held until it is repaired, by seq, each once
  #droppedHigh = -1; // the newest seq dropped from a full #buffer, read from history later

  constructor(client, name) {
    super();
    this.#client = client;
    this.#name = name;
  }

  get name() {
    return this.#name;
  }
  /** True while the server has this connection as a member. */
  get joined() {
    return this.#status === 'joined';
  }
  /** The seq of the last message delivered, or null before the first join. */
  get lastSeq() {
    return this.#lastSeq;
  }
  /** User ids present (namespaces with presence), as of the latest events. */
  get members() {
    return [...this.#members];
  }

  /**
   * Joins (and keeps rejoining after drops until leave()). Resolves with the
   * first `joined`: { seq, recovered, members }. `since` resumes from a seq the
   * application kept itself; without it a first join starts at the latest
   * message and a rejoin resumes after the last one delivered.
   */
  join({ since } = {}) {
    if (since !== undefined) {
      if (!Number.isInteger(since) || since < 0) {
        return Promise.reject(new TypeError('since must be a non-negative integer'));
      }
      this.#lastSeq = since;
    }
    this.#want = true;
    const p = new Promise((resolve, reject) => this.#joinWaiters.push({ resolve, reject }));
    if (this.#status === 'joined' && since === undefined) {
      this.#settleJoin({ seq: this.#lastSeq, recovered: true, members: this.members });
    } else if (this.#status !== 'joining' && this.#client.isOpen) {
      this.#sendJoin();
    }
    if (this.#client.state === 'idle') this.#client.connect().catch(() => {});
    return p;
  }

  /** Leaves: no more rejoins; queued publishes reject with code `left`. */
  async leave() {
    const wasMember = this.#status !== 'idle';
    this.#drop(new ParleyError('left', `left ${this.#name}`));
    if (wasMember && this.#client.isOpen) {
      await this.#client.request({ op: 'leave', ch: this.#name }, { retry: false }).catch(() => {});
    }
  }

  /**
   * Publishes `body`; resolves with the ack { seq, dup, id } once the server has
   * written it. Retried (same id) after a drop and after rate_limited,
   * backpressure or unavailable; rejects on other errors or after
   * publishTimeoutMs. With maxInFlight 1 (the default), one channel's
   * publishes are sequenced in call order even across retries.
   */
  publish(body, { id } = {}) {
    if (!this.#want) return Promise.reject(new ParleyError('forbidden', 'join the channel first'));
    return new Promise((resolve, reject) => {
      const entry = {
        id: id ?? this.#client.nextId(),
        body,
        resolve,
        reject,
        attempts: 0,
        state: 'queued', // queued | inflight | waiting | done
      };
      const timeoutMs = this.#client.options.publishTimeoutMs;
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.#settle(entry, null,
            new ParleyError('timeout', `publish ${entry.id} not acknowledged within ${timeoutMs} ms`));
          this.#pump();
        }, timeoutMs);
      }
      this.#publishes.push(entry);
      this.#pump();
    });
  }

  /**
   * Streams ephemeral state under `key` (e.g. an avatar's position): only the
   * latest body per key is kept, sent at most every stateMinIntervalMs, and
   * resent after a rejoin. Never throws; nothing is sent before the join.
   */
  setState(key, body) {
    let s = this.#states.get(key);
    if (!s) {
      s = { body: undefined, dirty: false, lastSent: 0, holdUntil: 0, timer: null };
      this.#states.set(key, s);
    }
    s.body = body;
    s.dirty = true;
    this.#flushState(key);
  }

  /** Stops streaming `key` (the last body is not resent after a rejoin). */
  clearState(key) {
    const s = this.#states.get(key);
    if (s) clearTimeout(s.timer);
    this.#states.delete(key);
  }

  /**
   * Sends `body` to the namespace's app server (`up`). Held while not joined
   * (at most 10,000), resent after rate_limited; the server answers only errors.
   */
  up(body) {
    if (!this.#want) throw new ParleyError('forbidden', 'join the channel first');
    if (this.joined && this.#client.isOpen) return this.#sendUp(body);
    this.#ups.push(body);
    if (this.#ups.length > MAX_UP_QUEUE) {
      this.#ups.shift();
      this.emit('error', new ParleyError('queue_full', 'up queue full: the oldest was dropped'));
    }
  }

  /**
   * Edits message `target` (its seq): resolves with { seq, target } once the
   * edit is written (`seq` is the edit's own). The author within the
   * namespace's edit window, a moderator, or the game server may.
   */
  async edit(target, body) {
    const reply = await this.#client.request({ op: 'edit', ch: this.#name, target, body });
    return { seq: reply.seq, target: reply.target };
  }

  /** Deletes message `target`: resolves with { seq, target }, as edit(). */
  async delete(target) {
    const reply = await this.#client.request({ op: 'delete', ch: this.#name, target });
    return { seq: reply.seq, target: reply.target };
  }

  /** Reads stored messages: exactly one of after / before, limit <= 1000. */
  async history({ after, before, limit } = {}) {
    const frame = { op: 'history', ch: this.#name };
    if (after !== undefined) frame.after = after;
    if (before !== undefined) frame.before = before;
    if (limit !== undefined) frame.limit = limit;
    const reply = await this.#client.request(frame);
    return reply.msgs;
  }

  // ---- driven by ParleyClient ----

  _onOpen() {
    if (this.#want) this.#sendJoin();
  }

  _onDrop() {
    if (this.#status !== 'idle') this.#status = 'idle';
    this.#joinGen++;
    for (const s of this.#states.values()) {
      clearTimeout(s.timer);
      s.timer = null;
    }
  }

  // PROTOCOL.md "State deltas": the client lost track of a stream's base (an
  // `sd` it cannot apply): leave and join again, which gives it full bodies.
  // The join asks `since` the last seq delivered, so no msg is lost; events
  // between the two are dropped (status joining) and come back with the join.
  _resync() {
    if (this.#status !== 'joined' || !this.#client.isOpen) return;
    this.#client.request({ op: 'leave', ch: this.#name }, { retry: false }).catch(() => {});
    this.#sendJoin();
  }

  _closed(err) {
    this.#want = false;
    this.#status = 'idle';
    this.#failJoinWaiters(err);
    for (const e of this.#publishes.splice(0)) this.#settle(e, null, err);
    this.#clearStates();
  }

  // PROTOCOL.md "Moderation": the server removed this connection from the
  // channel. No rejoin (a moderator's decision, and maybe a ban behind it):
  // what waits on the channel rejects with code `kicked`, and the channel's
  // `kicked` event carries the reason; join() again to try anyway.
  _onKicked(obj) {
    if (!this.#want && this.#status === 'idle') return;
    const reason = typeof obj.reason === 'string' ? obj.reason : '';
    this.#drop(new ParleyError('kicked', reason || `kicked from ${this.#name}`));
    this.emit('kicked', { ch: this.#name, reason });
  }

  // Not a member from now on, and no rejoin: what waits on the channel rejects with `err`.
  #drop(err) {
    this.#want = false;
    this.#status = 'idle';
    this.#joinGen++;
    this.#failJoinWaiters(err);
    for (const e of this.#publishes.splice(0)) this.#settle(e, null, err);
    this.#clearStates();
    this.#ups = [];
    this.#forgetRepair();
    this.#client.forgetStreams(this.#name);
  }

  _onEvent(obj) {
    if (this.#status !== 'joined') return;
    // Edits and deletes are entries of the log: in the same seq stream.
    if (obj.op === 'msg' || obj.op === 'edit' || obj.op === 'delete') return this.#onMsg(obj);
    if (obj.op === 'state') return this.emit('state', obj); // an `sd` arrives here applied (client.js)
    if (obj.op === 'presence') {
      const join = Array.isArray(obj.join) ? obj.join : [];
      const leave = Array.isArray(obj.leave) ? obj.leave : [];
      for (const u of join) this.#members.add(u);
      for (const u of leave) this.#members.delete(u);
      this.emit('presence', { ch: this.#name, join, leave });
    }
  }

  // An error frame for a state or up this channel sent; true when it was ours.
  _onFireAndForgetError(obj) {
    if (obj.rid === undefined) return false;
    if (this.#stateRids.has(obj.rid)) {
      const key = this.#stateRids.get(obj.rid);
      this.#stateRids.delete(obj.rid);
      const s = this.#states.get(key);
      if (s && RETRYABLE_CODES.has(obj.code)) {
        s.dirty = true; // the newest body goes out once the limit allows
        s.holdUntil = Date.now() + this.#client.retryDelay(obj);
        this.#client.emit('retry', { op: 'state', ch: this.#name, code: obj.code, retryMs: obj.retry_ms });
        this.#flushState(key);
      } else {
        this.emit('error', ParleyError.from(obj));
      }
      return true;
    }
    if (this.#upRids.has(obj.rid)) {
      const body = this.#upRids.get(obj.rid);
      this.#upRids.delete(obj.rid);
      if (RETRYABLE_CODES.has(obj.code)) {
        this.#client.emit('retry', { op: 'up', ch: this.#name, code: obj.code, retryMs: obj.retry_ms });
        this.#client.later(this.#client.retryDelay(obj), () => {
          if (this.#want) this.up(body);
        });
      } else {
        this.emit('error', ParleyError.from(obj));
      }
      return true;
    }
    return false;
  }

  // ---- joining ----

  #sendJoin() {
    this.#status = 'joining';
    this.#client.forgetStreams(this.#name); // a (re-)join's states come as full bodies
    const gen = ++this.#joinGen;
    const frame = { op: 'join', ch: this.#name };
    if (this.#lastSeq !== null) frame.since = this.#lastSeq;
    this.#client.submit({
      frame,
      retry: false, // a drop ends this attempt; _onOpen rejoins
      onReply: (obj) => {
        if (gen === this.#joinGen) this.#onJoined(obj);
      },
      onError: (obj) => {
        if (gen !== this.#joinGen) return;
        if (RETRYABLE_CODES.has(obj.code)) {
          this.#client.emit('retry', { op: 'join', ch: this.#name, code: obj.code, retryMs: obj.retry_ms });
          this.#client.later(this.#client.retryDelay(obj), () => {
            if (gen === this.#joinGen && this.#want && this.#client.isOpen) this.#sendJoin();
          });
          return;
        }
        // forbidden, quota_exceeded, bad_request: joining again will not help.
        const err = ParleyError.from(obj);
        this.#want = false;
        this.#status = 'idle';
        this.#failJoinWaiters(err);
        for (const e of this.#publishes.splice(0)) this.#settle(e, null, err);
        this.emit('error', err);
      },
      fail: (err) => {
        if (err.code === 'closed') this.#failJoinWaiters(err);
      },
    });
  }

  #onJoined(obj) {
    if (!this.#want) return;
    this.#status = 'joined';
    const prev = this.#lastSeq;
    if (prev === null) {
      this.#lastSeq = obj.seq;
    } else if (obj.seq < prev) {
      // The channel's log is behind what was delivered (e.g. a non-durable
      // namespace after a server restart): its seqs start over.
      this.#forgetRepair();
      this.#lastSeq = obj.seq;
      this.emit('reset', { ch: this.#name, lastSeq: prev, seq: obj.seq });
    }
    if (Array.isArray(obj.members)) this.#replaceMembers(obj.members);
    const info = { seq: obj.seq, recovered: obj.recovered, epoch: Number.isInteger(obj.epoch) ? obj.epoch : 1, members: this.members };
    this.emit('joined', info);
    this.#settleJoin(info);
    this.#pump();
    for (const [key, s] of this.#states) {
      if (s.body !== undefined) s.dirty = true;
      this.#flushState(key);
    }
    const ups = this.#ups.splice(0);
    for (const body of ups) this.#sendUp(body);
  }

  // After a rejoin the member list is the server's again; what changed while
  // disconnected is reported as one presence event, minus this user.
  #replaceMembers(list) {
    const next = new Set(list);
    const self = this.#client.user;
    const join = [...next].filter((u) => !this.#members.has(u) && u !== self);
    const leave = [...this.#members].filter((u) => !next.has(u) && u !== self);
    const hadList = this.#members.size > 0;
    this.#members = next;
    if (hadList && (join.length || leave.length)) {
      this.emit('presence', { ch: this.#name, join, leave });
    }
  }

  #settleJoin(info) {
    for (const w of this.#joinWaiters.splice(0)) w.resolve(info);
  }

  #failJoinWaiters(err) {
    for (const w of this.#joinWaiters.splice(0)) w.reject(err);
  }

  // ---- messages in seq order ----

  #onMsg(m) {
    if (!Number.isInteger(m.seq)) return;
    if (this.#repairing) {
      this.#hold(m);
      return;
    }
    if (m.seq <= this.#lastSeq) return; // delivered before (a resume resends)
    if (m.seq === this.#lastSeq + 1) {
      this.#lastSeq = m.seq;
      this.#deliver(m);
      return;
    }
    this.#hold(m);
    this.#repair();
  }

  // A log entry in seq order to the application: a `msg` (from history in
  // its current version: `edited` or a `deleted` tombstone), or an `edit` /
  // `delete` of an earlier message (PROTOCOL.md "Moderation"; MessageLog
  // applies them).
  #deliver(m) {
    this.emit(m.op === 'edit' || m.op === 'delete' ? m.op : 'msg', m);
  }

  // Keeps `m` (newer than what was delivered) in seq order, once. Over the
  // cap the newest goes and is read from history once what is held is
  // delivered (#droppedHigh); dropping the oldest would report seqs history
  // still has as a gap.
  #hold(m) {
    if (m.seq <= this.#lastSeq) return;
    const buf = this.#buffer;
    let lo = 0;
    let hi = buf.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (buf[mid].seq < m.seq) lo = mid + 1;
      else hi = mid;
    }
    if (buf[lo]?.seq === m.seq) return;
    buf.splice(lo, 0, m);
    if (buf.length > Math.max(1, this.#client.options.maxRepairBuffer)) {
      this.#droppedHigh = Math.max(this.#droppedHigh, buf.pop().seq);
    }
  }

  // The first seq past the hole being filled: the oldest held, or past the
  // newest dropped once nothing is held; lastSeq + 1 when there is no hole.
  #bound() {
    if (this.#buffer.length) return this.#buffer[0].seq;
    return Math.max(this.#lastSeq, this.#droppedHigh) + 1;
  }

  // Drops what was delivered from the held messages and delivers what now
  // continues the stream.
  #drain() {
    const buf = this.#buffer;
    let k = 0;
    while (k < buf.length && buf[k].seq <= this.#lastSeq) k++;
    while (k < buf.length && buf[k].seq === this.#lastSeq + 1) {
      this.#lastSeq = buf[k].seq;
      this.#deliver(buf[k]);
      k++;
    }
    if (k) buf.splice(0, k);
  }

  // A leave or a reset: what is held is stale, and a repair in flight ends
  // when its page comes back (a new one may start meanwhile).
  #forgetRepair() {
    this.#buffer = [];
    this.#droppedHigh = -1;
    this.#repairGen++;
    this.#repairing = false;
  }

  // Fills the hole between the last delivered seq and the first held message
  // (or the newest dropped) from history; what history no longer has is
  // reported as a `gap`.
  async #repair() {
    this.#repairing = true;
    const gen = this.#repairGen;
    let failures = 0;
    try {
      for (;;) {
        this.#drain();
        const bound = this.#bound();
        if (bound === this.#lastSeq + 1 || !this.#want) {
          this.#droppedHigh = -1;
          return;
        }
        let msgs = [];
        let failed = false;
        try {
          msgs = await this.history({
            after: this.#lastSeq,
            limit: Math.min(HISTORY_PAGE, bound - this.#lastSeq - 1),
          });
        } catch (err) {
          if (err.code === 'closed' || err.code === 'left') return;
          failed = true;
        }
        if (!this.#want || gen !== this.#repairGen) return;
        if (failed && ++failures < MAX_FAILED_PAGES) {
          // A read that failed (timed out, refused) is not history's answer:
          // what it asked for may still be there. Asked again; a gap only
          // after MAX_FAILED_PAGES failures in a row.
          await new Promise((r) => this.#client.later(this.#client.retryDelay(null), r));
          if (!this.#want || gen !== this.#repairGen) return;
          continue;
        }
        failures = 0;
        // Only what is past what was delivered: a page of seqs already
        // delivered is history having nothing after ours (asking again would loop).
        msgs = (Array.isArray(msgs) ? msgs : []).filter((h) => Number.isInteger(h?.seq) && h.seq > this.#lastSeq)
          .sort((a, b) => a.seq - b.seq);
        // Only what neither the page nor what is held covers is a gap: the
        // page may start late (history trimmed), may reach past the first
        // held seq, and what is held may have gained earlier seqs while the
        // page was read (a resume after a reconnect).
        const next = this.#lastSeq + 1;
        const oldest = msgs.length ? msgs[0].seq : Infinity;
        const to = Math.min(oldest, this.#bound()) - 1;
        if (to >= next) {
          this.emit('gap', { ch: this.#name, from: next, to });
          this.#lastSeq = to;
        }
        // The page in order: what continues the stream is delivered at once
        // (with what is held behind it), so a page is never cut down to the
        // buffer's size; only what lies past a hole is held.
        for (const h of msgs) {
          if (h.seq === this.#lastSeq + 1) {
            this.#lastSeq = h.seq;
            this.#deliver(h);
            this.#drain();
          } else {
            this.#hold(h);
          }
        }
      }
    } finally {
      if (gen === this.#repairGen) this.#repairing = false;
    }
  }

  // ---- publishing ----

  #pump() {
    if (this.#status !== 'joined' || !this.#client.isOpen) return;
    const window = Math.max(1, this.#client.options.maxInFlight);
    let busy = 0;
    for (const e of this.#publishes) if (e.state === 'inflight' || e.state === 'waiting') busy++;
    for (const e of this.#publishes) {
      if (busy >= window) break;
      if (e.state !== 'queued') continue;
      e.state = 'inflight';
      e.attempts++;
      busy++;
      this.#client.submit({
        frame: { op: 'pub', ch: this.#name, id: e.id, body: e.body },
        retry: false,
        onReply: (ack) => {
          this.#settle(e, { seq: ack.seq, dup: ack.dup, id: e.id });
          this.#pump();
        },
        onError: (obj) => this.#onPublishError(e, obj),
        fail: (err) => {
          if (e.state === 'done') return;
          if (err.code === 'closed') return this.#settle(e, null, err);
          e.state = 'queued'; // dropped in flight: resent, same id, after the rejoin
        },
      });
    }
  }

  #onPublishError(e, obj) {
    if (e.state === 'done') return;
    if (RETRYABLE_CODES.has(obj.code) && e.attempts < this.#client.options.maxRetryAttempts) {
      e.state = 'waiting';
      this.#client.emit('retry', { op: 'pub', ch: this.#name, id: e.id, code: obj.code, retryMs: obj.retry_ms });
      this.#client.later(this.#client.retryDelay(obj), () => {
        if (e.state !== 'waiting') return;
        e.state = 'queued';
        this.#pump();
      });
      return;
    }
    this.#settle(e, null, ParleyError.from(obj));
    this.#pump();
  }

  #settle(e, value, err) {
    if (e.state === 'done') return;
    e.state = 'done';
    clearTimeout(e.timer);
    const i = this.#publishes.indexOf(e);
    if (i >= 0) this.#publishes.splice(i, 1);
    if (err) e.reject(err);
    else e.resolve(value);
  }

  // ---- state and up ----

  #flushState(key) {
    const s = this.#states.get(key);
    if (!s || !s.dirty || s.timer) return;
    if (this.#status !== 'joined' || !this.#client.isOpen) return; // sent after the rejoin
    const now = Date.now();
    const at = Math.max(s.lastSent + this.#client.options.stateMinIntervalMs, s.holdUntil);
    if (at > now) {
      s.timer = this.#client.later(at - now, () => {
        s.timer = null;
        this.#flushState(key);
      });
      return;
    }
    const rid = this.#client.takeRid();
    if (this.#client.sendFrame({ op: 'state', ch: this.#name, key, body: s.body, rid })) {
      remember(this.#stateRids, rid, key);
      s.dirty = false;
      s.lastSent = now;
    }
  }

  #clearStates() {
    for (const s of this.#states.values()) clearTimeout(s.timer);
    this.#states.clear();
  }

  #sendUp(body) {
    const rid = this.#client.takeRid();
    if (this.#client.sendFrame({ op: 'up', ch: this.#name, body, rid })) {
      remember(this.#upRids, rid, body);
    } else {
      this.#ups.push(body);
    }
  }
}
