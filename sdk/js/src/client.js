// ParleyClient: one logical connection to a Parley server (docs/PROTOCOL.md),
// kept alive across drops. It says hello, rejoins every channel the
// application joined with `since` = the last seq it delivered, resends what
// was in flight (publishes keep their client ids, so the server's dedupe makes
// a resend harmless), and reconnects with backoff and jitter, or after a
// server's `bye` with at least its `reconnect_ms`.
//
// Runs on the host's single JavaScript thread (browser or Node); every
// callback and event comes from there.
import { Emitter } from './emitter.js';
import { backoffDelay, withJitter } from './backoff.js';
import { Channel } from './channel.js';
import { ParleyError, RETRYABLE_CODES } from './errors.js';
import { codecFor } from './codec.js';
import { StateStreams, sdsEntries } from './state_streams.js';
import { ServerClock } from './server_clock.js';

const DEFAULTS = {
  reconnect: { minMs: 250, maxMs: 15000, factor: 2 },
  connectTimeoutMs: 15000,
  requestTimeoutMs: 30000,
  publishTimeoutMs: 60000,
  maxInFlight: 1,
  stateMinIntervalMs: 0,
  retryJitter: 0.25,
  maxRetryAttempts: 50,
  maxRepairBuffer: 10000,
  stateDeltas: false,
  stateDeltaBatch: false,
  clockSyncMs: 0,
};

// Ping rids whose send time is kept for the clock estimate (liveness and clock pings).
const MAX_TIMED_PINGS = 64;

// Close codes after which reconnecting with the same credentials is pointless.
const CLOSE_UNAUTHORIZED = 4001;
const CLOSE_BAD_VERSION = 4002;
const WS_OPEN = 1;

function randomPrefix(random) {
  let s = '';
  for (let i = 0; i < 8; i++) s += Math.floor(random() * 36).toString(36);
  return s;
}

// What a socket's message event holds, as the codec takes it: JSON text, or
// the bytes of a binary message (binaryType 'arraybuffer': browsers would
// hand over a Blob otherwise; ws may still give a Buffer, a Uint8Array).
function dataOf(data, codec) {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) data = new Uint8Array(data);
  else if (ArrayBuffer.isView(data) && !(data instanceof Uint8Array)) {
    data = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  // ws hands a text message to a JSON socket as a Buffer.
  if (!codec.binary && data instanceof Uint8Array) return new TextDecoder().decode(data);
  return data;
}

export class ParleyClient extends Emitter {
  #url;
  #token;
  #WS;
  #codec; // null until a MessagePack codec has loaded (#codecLoad)
  #codecLoad = null;
  #encoding;
  #opts;
  #random;
  #ws = null;
  #state = 'idle'; // idle | connecting | open | waiting | closed
  #epoch = 0; // one per socket: a late event of an old socket is ignored
  #attempt = 0;
  #authFailures = 0;
  #byeReconnectMs = null;
  #reconnectTimer = null;
  #connectTimer = null;
  #liveTimer = null;
  #lastRx = 0;
  #nextRid = 1;
  #helloRid = null;
  #pending = new Map(); // rid -> call (see #call)
  #outbox = []; // requests waiting for an open connection
  #channels = new Map();
  #connectWaiters = [];
  #idPrefix;
  #idCounter = 0;
  #welcome = null;
  #streams = new StateStreams(); // this connection's state delta streams (sids)
  #clock = new ServerClock();
  #pingSent = new Map(); // rid -> local send time, for pongs' ts
  #clockTimer = null;

  /**
   * @param {object} opts see index.d.ts (ClientOptions)
   */
  constructor(opts = {}) {
    super();
    if (!opts.url) throw new TypeError('ParleyClient: url is required');
    if (!opts.token) throw new TypeError('ParleyClient: token is required');
    this.#url = opts.url;
    this.#token = opts.token;
    this.#WS = opts.WebSocket ?? globalThis.WebSocket;
    if (typeof this.#WS !== 'function') {
      throw new TypeError(
        'ParleyClient: no WebSocket implementation; pass { WebSocket } (e.g. from the ws package)');
    }
    this.#random = opts.random ?? Math.random;
    const codec = codecFor(opts.encoding);
    this.#encoding = opts.encoding ?? 'json';
    if (typeof codec.then === 'function') {
      this.#codec = null;
      this.#codecLoad = codec;
      codec.catch(() => {}); // reported by #open
    } else {
      this.#codec = codec;
    }
    this.#opts = {
      ...DEFAULTS,
      ...opts,
      reconnect: opts.reconnect === false ? false : { ...DEFAULTS.reconnect, ...(opts.reconnect ?? {}) },
    };
    this.#idPrefix = opts.idPrefix ?? `${randomPrefix(this.#random)}-`;
  }

  /** idle | connecting | open | waiting (to reconnect) | closed */
  get state() {
    return this.#state;
  }
  /** The last `welcome` (conn, user, tenant, heartbeat_ms), or null before the first. */
  get welcome() {
    return this.#welcome;
  }
  get user() {
    return this.#welcome?.user ?? null;
  }
  get conn() {
    return this.#welcome?.conn ?? null;
  }
  get options() {
    return this.#opts;
  }
  /** 'json' or 'msgpack': the encoding frames travel in (the `encoding` option). */
  get encoding() {
    return this.#encoding;
  }
  get random() {
    return this.#random;
  }

  /**
   * The server clock estimate from pongs' `ts` (PROTOCOL.md "Time for games"):
   * { offset, rtt } in ms, server time = local time + offset, wrong by at most
   * rtt / 2; null before the first pong with `ts` on this connection.
   */
  get clock() {
    return this.#clock.estimate;
  }

  /** The server's time now (ms since the epoch) as estimated, or null without an estimate. */
  serverNow() {
    const c = this.#clock.estimate;
    return c ? Date.now() + c.offset : null;
  }

  /** A server time (a state's `ts`) in local Date.now() terms, or null without an estimate. */
  toLocalTime(serverTs) {
    const c = this.#clock.estimate;
    return c && Number.isFinite(serverTs) ? serverTs - c.offset : null;
  }

  /**
   * Starts connecting (if not already) and resolves with the next `welcome`.
   * Rejects when the server refuses the credentials for good or close() is called.
   */
  connect() {
    if (this.#state === 'closed') return Promise.reject(new ParleyError('closed', 'client is closed'));
    if (this.#state === 'open') return Promise.resolve(this.#welcome);
    const p = new Promise((resolve, reject) => this.#connectWaiters.push({ resolve, reject }));
    if (this.#state === 'idle') this.#open();
    return p;
  }

  /** Closes for good: the socket closes with 1000, pending operations reject. */
  close() {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    clearTimeout(this.#reconnectTimer);
    clearTimeout(this.#connectTimer);
    clearInterval(this.#liveTimer);
    clearInterval(this.#clockTimer);
    const ws = this.#ws;
    this.#ws = null;
    this.#epoch++;
    if (ws) {
      try {
        ws.close(1000, 'client closed');
      } catch {
        // already closing
      }
    }
    const err = new ParleyError('closed', 'client is closed');
    for (const call of this.#pending.values()) call.fail(err);
    this.#pending.clear();
    for (const call of this.#outbox) call.fail(err);
    this.#outbox = [];
    for (const ch of this.#channels.values()) ch._closed(err);
    for (const w of this.#connectWaiters.splice(0)) w.reject(err);
    this.emit('closed');
  }

  /** The Channel object of `name` (created on first use; not joined until join()). */
  channel(name) {
    let ch = this.#channels.get(name);
    if (!ch) {
      ch = new Channel(this, name);
      this.#channels.set(name, ch);
    }
    return ch;
  }

  /** Shorthand for channel(name).join(opts). */
  join(name, opts) {
    return this.channel(name).join(opts);
  }

  /** Round trip time of a `ping`, in ms; its pong's `ts` feeds `clock`. */
  async ping() {
    const t0 = Date.now();
    const pong = await this.request({ op: 'ping' }, { retry: false });
    const t1 = Date.now();
    this.#clock.sample(t0, t1, pong?.ts);
    return t1 - t0;
  }

  /**
   * Sends a request op and resolves with its reply object (rejects with a
   * ParleyError on an `error` reply). Queued while disconnected; with
   * `retry` (the default) it is resent after a drop and after a retryable
   * error's `retry_ms`.
   */
  request(frame, { retry = true, timeoutMs = this.#opts.requestTimeoutMs } = {}) {
    return new Promise((resolve, reject) => {
      let timer = null;
      let attempts = 0;
      const call = {
        frame,
        retry,
        settled: false,
        onReply: (obj) => {
          call.settled = true;
          clearTimeout(timer);
          resolve(obj);
        },
        onError: (obj) => {
          if (retry && RETRYABLE_CODES.has(obj.code) && ++attempts < this.#opts.maxRetryAttempts) {
            this.emit('retry', { op: frame.op, ch: frame.ch, code: obj.code, retryMs: obj.retry_ms });
            this.later(this.retryDelay(obj), () => {
              if (!call.settled) this.submit(call);
            });
            return;
          }
          call.fail(ParleyError.from(obj));
        },
        fail: (err) => {
          call.settled = true;
          clearTimeout(timer);
          reject(err);
        },
      };
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.#forget(call);
          call.fail(new ParleyError('timeout', `no reply to ${frame.op} within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.submit(call);
    });
  }

  // ---- for Channel (package-internal) ----

  /** True when frames can be sent now (welcomed). */
  get isOpen() {
    return this.#state === 'open';
  }

  /** A fresh client message id: unique per client instance. */
  nextId() {
    return `${this.#idPrefix}${++this.#idCounter}`;
  }

  /** Delay before retrying after an error frame: its retry_ms (or 100), plus jitter. */
  retryDelay(errObj) {
    const base = Number.isFinite(errObj?.retry_ms) && errObj.retry_ms > 0 ? errObj.retry_ms : 100;
    return withJitter(base, this.#opts.retryJitter, this.#random);
  }

  /** setTimeout that is dropped when the client is closed. */
  later(ms, fn) {
    const t = setTimeout(() => {
      if (this.#state !== 'closed') fn();
    }, ms);
    return t;
  }

  /**
   * Sends `call.frame` with a fresh rid when open, else queues it for the next
   * connection. call: { frame, retry, onReply(obj), onError(obj), fail(err) }.
   */
  submit(call) {
    if (this.#state === 'closed') return call.fail(new ParleyError('closed', 'client is closed'));
    if (!this.isOpen) {
      this.#outbox.push(call);
      return;
    }
    const rid = this.#nextRid++;
    call.rid = rid;
    this.#pending.set(rid, call);
    this.sendFrame({ ...call.frame, rid });
  }

  /** Sends a frame without waiting for a reply (state, up). False when not open. */
  sendFrame(frame) {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WS_OPEN) return false;
    let data;
    try {
      data = this.#codec.encode(frame);
    } catch (err) {
      // A body MessagePack cannot carry (nested past 1,024 levels): as JSON.stringify would throw.
      throw new ParleyError('bad_request', `cannot encode ${frame.op}: ${err.message}`);
    }
    ws.send(data);
    return true;
  }

  /** A rid for a fire-and-forget op whose error replies the caller matches itself. */
  takeRid() {
    return this.#nextRid++;
  }

  /** The channel is left or re-joined: its delta streams start over (full bodies follow). */
  forgetStreams(ch) {
    this.#streams.forget(ch);
  }

  // A ping whose pong only feeds the clock (liveness, clockSyncMs).
  #timedPing() {
    const rid = this.takeRid();
    if (!this.sendFrame({ op: 'ping', rid })) return;
    this.#pingSent.set(rid, Date.now());
    if (this.#pingSent.size > MAX_TIMED_PINGS) this.#pingSent.delete(this.#pingSent.keys().next().value);
  }

  // ---- connection lifecycle ----

  async #open() {
    this.#state = 'connecting';
    const epoch = ++this.#epoch;
    let url;
    let token;
    try {
      url = typeof this.#url === 'function' ? await this.#url() : this.#url;
      token = typeof this.#token === 'function' ? await this.#token() : this.#token;
    } catch (err) {
      if (epoch !== this.#epoch) return;
      this.emit('error', err);
      return this.#scheduleReconnect(null);
    }
    if (epoch !== this.#epoch) return;
    if (!this.#codec) {
      try {
        this.#codec = await this.#codecLoad;
      } catch (err) {
        if (epoch !== this.#epoch) return;
        this.emit('error', new ParleyError('unsupported',
          `encoding 'msgpack' needs the @msgpack/msgpack package: ${err.message}`));
        this.close();
        return;
      }
      if (epoch !== this.#epoch) return;
    }
    let ws;
    try {
      // PROTOCOL.md: MessagePack is asked for with its subprotocol; JSON needs none.
      ws = this.#codec.subprotocol ? new this.#WS(url, [this.#codec.subprotocol]) : new this.#WS(url);
      if (this.#codec.binary) ws.binaryType = 'arraybuffer';
    } catch (err) {
      this.emit('error', err);
      return this.#scheduleReconnect(null);
    }
    this.#ws = ws;
    this.#byeReconnectMs = null;
    this.#helloRid = null;
    ws.onopen = () => {
      if (epoch !== this.#epoch) return;
      this.#helloRid = this.#nextRid++;
      this.#lastRx = Date.now();
      const hello = { op: 'hello', v: 1, token, rid: this.#helloRid };
      // PROTOCOL.md "State deltas": asked for per connection; a server without it sends full bodies.
      if (this.#opts.stateDeltas) {
        // "Batched state deltas": a tick's deltas in one `sds` frame.
        hello.caps = this.#opts.stateDeltaBatch ? ['state_delta', 'state_delta_batch'] : ['state_delta'];
      }
      ws.send(this.#codec.encode(hello));
    };
    ws.onmessage = (ev) => {
      if (epoch !== this.#epoch) return;
      this.#onData(dataOf(ev.data, this.#codec));
    };
    ws.onclose = (ev) => {
      if (epoch !== this.#epoch) return;
      this.#onDrop(ev?.code ?? 1006, ev?.reason ?? '');
    };
    ws.onerror = () => {
      // A close event follows; nothing to do here.
    };
    clearTimeout(this.#connectTimer);
    this.#connectTimer = setTimeout(() => {
      if (epoch !== this.#epoch || this.#state === 'open') return;
      this.#abandon(ws, 4000, 'connect timeout');
    }, this.#opts.connectTimeoutMs);
  }

  // Drops the socket at once (a dead peer may never complete a close) and
  // treats it as a drop.
  #abandon(ws, code, reason) {
    this.#epoch++;
    this.#ws = null;
    try {
      if (typeof ws.terminate === 'function') ws.terminate();
      else ws.close();
    } catch {
      // ignore
    }
    this.#onDrop(code, reason, true);
  }

  #onData(data) {
    this.#lastRx = Date.now();
    let value;
    try {
      value = this.#codec.decode(data);
    } catch (err) {
      this.emit('error', new ParleyError('bad_frame', `the server sent a frame that is not ${
        this.#codec.binary ? 'MessagePack as PROTOCOL.md maps it' : 'JSON'}: ${err.message}`));
      return;
    }
    // PROTOCOL.md: a server frame is one object or an array of objects.
    if (Array.isArray(value)) {
      for (const obj of value) this.#dispatch(obj);
    } else {
      this.#dispatch(value);
    }
  }

  #dispatch(obj) {
    if (obj === null || typeof obj !== 'object') return;
    this.emit('frame', obj);
    switch (obj.op) {
      case 'welcome':
        if (obj.rid === this.#helloRid) return this.#onWelcome(obj);
        return;
      case 'state':
        if (obj.sid !== undefined) this.#streams.full(obj);
        return this.#channels.get(obj.ch)?._onEvent(obj);
      case 'sd':
        return this.#onStateDelta(obj);
      case 'sds':
        return this.#onStateDeltaBatch(obj);
      case 'msg':
      case 'edit':
      case 'delete':
      case 'presence':
        return this.#channels.get(obj.ch)?._onEvent(obj);
      case 'pong':
        if (this.#pingSent.has(obj.rid)) {
          this.#clock.sample(this.#pingSent.get(obj.rid), Date.now(), obj.ts);
          this.#pingSent.delete(obj.rid);
          return;
        }
        return this.#onReply(obj);
      case 'direct':
        return this.emit('direct', obj);
      case 'kicked':
        this.#channels.get(obj.ch)?._onKicked(obj);
        return this.emit('kicked', { ch: obj.ch, reason: typeof obj.reason === 'string' ? obj.reason : '' });
      case 'bye':
        if (Number.isFinite(obj.reconnect_ms)) this.#byeReconnectMs = obj.reconnect_ms;
        return this.emit('bye', obj);
      case 'error':
        return this.#onErrorFrame(obj);
      default:
        return this.#onReply(obj);
    }
  }

  #onReply(obj) {
    if (obj.rid === undefined) return this.emit('unhandled', obj);
    const call = this.#pending.get(obj.rid);
    if (!call) return;
    this.#pending.delete(obj.rid);
    call.onReply(obj);
  }

  // PROTOCOL.md "State deltas": an `sd` becomes the full `state` it stands
  // for. One the client cannot apply (no base: it lost track; malformed) is
  // dropped, never guessed at, and the channel is joined again, which gives
  // it full bodies; with an unknown sid (the frame does not say which
  // channel), every channel this connection has delta streams in.
  #onStateDelta(obj) {
    const r = this.#streams.take(obj);
    if (r.state) return this.#channels.get(r.state.ch)?._onEvent(r.state);
    if (r.stale) {
      // Sent before the server saw this channel's leave (a re-join is under
      // way, or the application left): nothing to deliver. Once re-joined,
      // the server owes full bodies, so a stale sid then is a lost track.
      if (!this.#channels.get(r.ch)?.joined) return;
      r.error = `an sd frame for stream ${obj.sid} of ${r.ch} after the re-join, before its full body`;
    }
    this.emit('error', new ParleyError('bad_frame', r.error));
    const chans = r.ch !== undefined ? [r.ch] : [...this.#channels.keys()];
    for (const ch of chans) {
      this.#streams.forget(ch);
      this.#channels.get(ch)?._resync();
    }
  }

  // PROTOCOL.md "Batched state deltas": each entry is the `sd` it stands
  // for, applied in order. A frame of the wrong shape is dropped whole (no
  // entry applied) and every channel with delta streams re-joined, as for an
  // sd of an unknown sid: the frame does not say whose streams it held.
  #onStateDeltaBatch(obj) {
    const r = sdsEntries(obj);
    if (r.error) {
      this.emit('error', new ParleyError('bad_frame', r.error));
      for (const ch of this.#channels.keys()) {
        this.#streams.forget(ch);
        this.#channels.get(ch)?._resync();
      }
      return;
    }
    for (const sd of r.entries) this.#onStateDelta(sd);
  }

  #onErrorFrame(obj) {
    if (obj.rid !== undefined && obj.rid === this.#helloRid) {
      // The close that follows decides; remember why.
      this.emit('error', ParleyError.from(obj));
      return;
    }
    const call = obj.rid !== undefined ? this.#pending.get(obj.rid) : undefined;
    if (call) {
      this.#pending.delete(obj.rid);
      return call.onError(obj);
    }
    // Errors of fire-and-forget ops (state, up) are matched by their channel.
    for (const ch of this.#channels.values()) {
      if (ch._onFireAndForgetError(obj)) return;
    }
    this.emit('error', ParleyError.from(obj));
  }

  #onWelcome(obj) {
    clearTimeout(this.#connectTimer);
    this.#state = 'open';
    // A welcome without `caps` (an older server) grants nothing: full bodies.
    const caps = Array.isArray(obj.caps) ? obj.caps.filter((c) => typeof c === 'string') : [];
    this.#welcome = { conn: obj.conn, user: obj.user, tenant: obj.tenant, heartbeat_ms: obj.heartbeat_ms,
      enc: this.#codec.name, caps, stateDeltas: caps.includes('state_delta'),
      stateDeltaBatch: caps.includes('state_delta') && caps.includes('state_delta_batch') };
    this.#streams.clear(); // sids are the old connection's
    this.#pingSent.clear();
    this.#clock = new ServerClock(); // another server, maybe another path
    this.#attempt = 0;
    this.#authFailures = 0;
    this.#startLiveness(obj.heartbeat_ms);
    this.#startClockSync();
    this.emit('open', this.#welcome);
    for (const w of this.#connectWaiters.splice(0)) w.resolve(this.#welcome);
    // Joins first: a channel's publishes wait for its `joined`.
    for (const ch of this.#channels.values()) ch._onOpen();
    const queued = this.#outbox.splice(0);
    for (const call of queued) this.submit(call);
  }

  // The server pings WebSocket clients itself; this catches the cases where
  // the host never notices a dead connection (a laptop that slept, a NAT that
  // forgot the flow): after a quiet heartbeat period, ask; after two, drop.
  // The period is the `heartbeatMs` option, else the welcome's heartbeat_ms;
  // the drop comes after 2 periods plus up to one more (at most 5 s) of slack.
  #startLiveness(heartbeatMs) {
    clearInterval(this.#liveTimer);
    const given = this.#opts.heartbeatMs ?? heartbeatMs;
    const period = Number.isFinite(given) && given > 0 ? given : 25000;
    const ws = this.#ws;
    this.#liveTimer = setInterval(() => {
      if (this.#ws !== ws || !this.isOpen) return;
      const quiet = Date.now() - this.#lastRx;
      if (quiet > 2 * period + Math.min(period, 5000)) return this.#abandon(ws, 4000, 'no traffic from the server');
      if (quiet > period) this.#timedPing();
    }, Math.max(100, Math.floor(period / 2)));
  }

  // clockSyncMs > 0: a ping at once and then every clockSyncMs, so `clock` is
  // always fresh (a game interpolating by server time wants that).
  #startClockSync() {
    clearInterval(this.#clockTimer);
    const every = this.#opts.clockSyncMs;
    if (!(Number.isFinite(every) && every > 0)) return;
    const ws = this.#ws;
    this.#timedPing();
    this.#clockTimer = setInterval(() => {
      if (this.#ws === ws && this.isOpen) this.#timedPing();
    }, Math.max(100, every));
  }

  #onDrop(code, reason, abandoned = false) {
    if (this.#state === 'closed') return;
    if (!abandoned) {
      this.#epoch++;
      this.#ws = null;
    }
    clearTimeout(this.#connectTimer);
    clearInterval(this.#liveTimer);
    clearInterval(this.#clockTimer);
    this.#streams.clear();
    const wasOpen = this.#state === 'open';
    // What was in flight goes back to the outbox (to be resent) or fails.
    const dropped = new ParleyError('disconnected', `connection closed (${code})`);
    for (const call of this.#pending.values()) {
      if (call.retry) this.#outbox.push(call);
      else call.fail(dropped);
    }
    this.#pending.clear();
    for (const ch of this.#channels.values()) ch._onDrop();

    let fatal = null;
    if (code === CLOSE_BAD_VERSION) fatal = 'bad_request';
    if (code === CLOSE_UNAUTHORIZED) {
      // A token function may mint a fresh token; a fixed token will not change.
      this.#authFailures++;
      if (typeof this.#token !== 'function' || this.#authFailures >= 3) fatal = 'unauthorized';
    }
    if (fatal || this.#opts.reconnect === false) {
      this.emit('disconnect', { code, reason, wasOpen, willReconnect: false });
      const err = new ParleyError(fatal ?? 'disconnected', `connection closed (${code} ${reason})`);
      for (const w of this.#connectWaiters.splice(0)) w.reject(err);
      this.close();
      return;
    }
    this.#scheduleReconnect({ code, reason, wasOpen });
  }

  #scheduleReconnect(info) {
    if (this.#state === 'closed') return;
    this.#state = 'waiting';
    const delayMs =
      this.#byeReconnectMs !== null && this.#byeReconnectMs > 0
        ? withJitter(this.#byeReconnectMs, 0.5, this.#random)
        : backoffDelay(this.#attempt++, this.#opts.reconnect, this.#random);
    this.#byeReconnectMs = null;
    this.emit('disconnect', { ...(info ?? { code: 0, reason: 'connect failed', wasOpen: false }),
      willReconnect: true, delayMs });
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = setTimeout(() => {
      if (this.#state !== 'waiting') return;
      this.emit('reconnecting', { attempt: this.#attempt });
      this.#open();
    }, delayMs);
  }

  #forget(call) {
    if (call.rid !== undefined) this.#pending.delete(call.rid);
    const i = this.#outbox.indexOf(call);
    if (i >= 0) this.#outbox.splice(i, 1);
  }
}
