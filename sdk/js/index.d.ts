// Types of @parley/client (hand-written; the code is plain ES modules in src/).
// Frames follow docs/PROTOCOL.md.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The codes of PROTOCOL.md's "Errors" plus the SDK's own. */
export type ErrorCode =
  | 'bad_request' | 'unauthorized' | 'forbidden' | 'too_large' | 'rate_limited'
  | 'backpressure' | 'quota_exceeded' | 'unavailable' | 'internal'
  | 'timeout' | 'disconnected' | 'closed' | 'left' | 'bad_frame' | 'queue_full'
  | (string & {});

export declare const RETRYABLE_CODES: ReadonlySet<string>;

export declare class ParleyError extends Error {
  constructor(code: ErrorCode, message: string, retryMs?: number);
  readonly code: ErrorCode;
  /** The server's retry_ms, when it gave one. */
  readonly retryMs?: number;
  /** rate_limited, backpressure or unavailable. */
  readonly retryable: boolean;
  static from(errorFrame: { code?: string; msg?: string; retry_ms?: number }): ParleyError;
}

export interface ReconnectOptions {
  /** First delay (ms); doubles (`factor`) per failed attempt up to maxMs. Default 250. */
  minMs?: number;
  /** Default 15000. */
  maxMs?: number;
  /** Default 2. */
  factor?: number;
}

/** What the SDK needs of a WebSocket: the browser's, Node's global one, or `ws`'s. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string | Uint8Array): void;
  /** Set to 'arraybuffer' for MessagePack (binary messages). */
  binaryType?: string;
  close(code?: number, reason?: string): void;
  terminate?(): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string, protocols?: string[]) => WebSocketLike;

export interface ClientOptions {
  /** ws://host:port/v1/ws, or a function called before every (re)connect. */
  url: string | (() => string | Promise<string>);
  /** A client JWT, or a function called before every (re)connect (lets a token be refreshed). */
  token: string | (() => string | Promise<string>);
  /** Default: globalThis.WebSocket. In Node < 22 pass `WebSocket` from the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** Reconnect backoff (with jitter), or false to never reconnect. */
  reconnect?: ReconnectOptions | false;
  /** Hello to welcome, ms (default 15000): past it the attempt counts as failed. */
  connectTimeoutMs?: number;
  /**
   * Liveness period, ms (default: the welcome's heartbeat_ms): after this long
   * without traffic the client pings; after 2 periods plus up to one more
   * (at most 5 s) it drops the connection and reconnects.
   */
  heartbeatMs?: number;
  /** join/history/leave/ping reply timeout, ms (default 30000). */
  requestTimeoutMs?: number;
  /** A publish not acknowledged within this rejects with `timeout` (default 60000; 0: never). */
  publishTimeoutMs?: number;
  /**
   * Unacknowledged publishes per channel (default 1). With 1, a channel's
   * publishes are sequenced in call order even across retries; above 1 a
   * retried publish may land after a later one.
   */
  maxInFlight?: number;
  /** Minimum ms between two `state` frames of one key (default 0); latest wins. */
  stateMinIntervalMs?: number;
  /** A server-given retry_ms is stretched by up to this fraction (default 0.25). */
  retryJitter?: number;
  /** Attempts of one request or publish on retryable errors (default 50). */
  maxRetryAttempts?: number;
  /**
   * Per channel, messages newer than a hole held while history fills it
   * (default 10,000). Over it the newest held is dropped and read from
   * history once the hole is filled, never reported as a gap while history
   * still has it.
   */
  maxRepairBuffer?: number;
  /** Prefix of generated publish ids (default: 8 random chars and '-'). */
  idPrefix?: string;
  /** Source of randomness for jitter and ids (tests). */
  random?: () => number;
  /**
   * 'json' (default) or 'msgpack': MessagePack in binary frames, asked for with
   * the subprotocol parley.v1.msgpack (PROTOCOL.md "Binary encoding"). Bodies
   * are the same either way: binary values are {"$bin": base64} (see bin()).
   */
  encoding?: 'json' | 'msgpack';
  /**
   * Ask for state deltas (PROTOCOL.md "State deltas"; default false): in a
   * namespace with `state_delta = true` the server then sends only the
   * changed top-level fields of a `state` body, and the client applies them:
   * `state` events carry full bodies either way. A server or namespace
   * without deltas sends full bodies as before.
   */
  stateDeltas?: boolean;
  /**
   * With stateDeltas, also ask for batched deltas (PROTOCOL.md "Batched state
   * deltas", `hello` capability `state_delta_batch`; default false): a tick's
   * deltas come in one `sds` frame, fewer bytes; `state` events are the same.
   */
  stateDeltaBatch?: boolean;
  /**
   * Ping every this many ms (and once after every welcome) to keep `clock`
   * fresh; default 0: only ping() and the liveness pings feed it.
   */
  clockSyncMs?: number;
}

export interface Welcome {
  conn: string;
  user: string;
  tenant: string;
  heartbeat_ms: number;
  /** The encoding of this connection's frames. */
  enc: 'json' | 'msgpack';
  /** The capabilities the server granted (the welcome's `caps`; [] from an older server). */
  caps: string[];
  /** True when this connection gets state deltas (`caps` holds "state_delta"). */
  stateDeltas: boolean;
  /** True when its deltas come batched (`caps` holds "state_delta_batch" too). */
  stateDeltaBatch: boolean;
}

/** The server clock estimate (PROTOCOL.md "Time for games"). */
export interface ClockEstimate {
  /** server time = local Date.now() + offset, ms; wrong by at most rtt / 2. */
  offset: number;
  /** Round trip of the ping it comes from (the smallest of the last 8), ms. */
  rtt: number;
}

export interface MsgFrame {
  op: 'msg';
  ch: string;
  seq: number;
  from: string;
  id: string;
  ts: number;
  /** Absent on a tombstone (`deleted`). */
  body: Json;
  /** From history or a resume: the ts of the message's latest edit (PROTOCOL.md "Moderation"). */
  edited?: number;
  /** From history or a resume: the message was deleted (no body). */
  deleted?: true;
}
/** An edit or delete of message `target`, an entry of the channel's log at its own `seq`. */
export interface ModerationFrame {
  op: 'edit' | 'delete';
  ch: string;
  seq: number;
  target: number;
  from: string;
  ts: number;
  /** edit only: the new body. */
  body?: Json;
}
export declare class MessageLog {
  constructor(opts?: { max?: number });
  readonly size: number;
  get(seq: number): MsgFrame | undefined;
  messages(): MsgFrame[];
  apply(entry: MsgFrame | ModerationFrame): MsgFrame | null;
  applyAll(entries: Array<MsgFrame | ModerationFrame>): void;
}
export interface StateFrame {
  op: 'state';
  ch: string;
  from: string;
  key: string;
  /** The full body, also when it arrived as a delta (`sd`). Shared with nothing the SDK keeps. */
  body: Json;
  /** The sender's position, when it sent one (interest areas). */
  pos?: number[];
  /** The server's tick number at sending (absent where the namespace has tick_ms = 0). */
  tick?: number;
  /** The server's time at that tick, ms since the epoch; local time: client.toLocalTime(ts). */
  ts?: number;
  /** The stream id on a connection with state deltas (the SDK's business). */
  sid?: number;
}
export interface PresenceEvent {
  ch: string;
  join: string[];
  leave: string[];
}
export interface KickedEvent {
  ch: string;
  /** The moderator's reason; "" when none was given. */
  reason: string;
}
export interface DirectFrame {
  op: 'direct';
  from: string;
  body: Json;
}
export interface ByeFrame {
  op: 'bye';
  code: string;
  reconnect_ms?: number;
}
export interface JoinInfo {
  /** The channel's latest seq at the join. */
  seq: number;
  /** false when history no longer held everything after `since`. */
  recovered: boolean;
  /** The channel's epoch (PROTOCOL.md "Channel epoch"; 1 when the server sends none). */
  epoch: number;
  members: string[];
}
export interface Ack {
  seq: number;
  dup: boolean;
  id: string;
}
export interface RetryEvent {
  op: 'pub' | 'state' | 'up' | 'join' | 'history' | string;
  ch?: string;
  id?: string;
  code: string;
  retryMs?: number;
}
export interface DisconnectEvent {
  code: number;
  reason: string;
  wasOpen: boolean;
  willReconnect: boolean;
  /** Delay before the next attempt, when willReconnect. */
  delayMs?: number;
}
export interface GapEvent {
  ch: string;
  /** First and last seq that could not be recovered (history no longer has them). */
  from: number;
  to: number;
}
export interface ResetEvent {
  ch: string;
  /** The last seq delivered before. */
  lastSeq: number;
  /** The channel's latest seq now (lower: its log started over). */
  seq: number;
}

export interface ClientEvents {
  open: (welcome: Welcome) => void;
  disconnect: (ev: DisconnectEvent) => void;
  reconnecting: (ev: { attempt: number }) => void;
  bye: (frame: ByeFrame) => void;
  direct: (frame: DirectFrame) => void;
  /** PROTOCOL.md "Moderation": a moderator removed this connection from `ch`. */
  kicked: (ev: KickedEvent) => void;
  retry: (ev: RetryEvent) => void;
  error: (err: Error) => void;
  frame: (obj: Record<string, unknown>) => void;
  unhandled: (obj: Record<string, unknown>) => void;
  closed: () => void;
}

export interface ChannelEvents {
  msg: (m: MsgFrame) => void;
  edit: (e: ModerationFrame) => void;
  delete: (e: ModerationFrame) => void;
  state: (s: StateFrame) => void;
  presence: (p: PresenceEvent) => void;
  joined: (info: JoinInfo) => void;
  gap: (g: GapEvent) => void;
  reset: (r: ResetEvent) => void;
  /** Removed by a moderator: the channel is left (no rejoin); pending publishes reject with `kicked`. */
  kicked: (ev: KickedEvent) => void;
  error: (err: ParleyError) => void;
}

declare class TypedEmitter<E extends { [K in keyof E]: (...args: any[]) => void }> {
  on<K extends keyof E>(type: K, fn: E[K]): () => void;
  once<K extends keyof E>(type: K, fn: E[K]): () => void;
  off<K extends keyof E>(type: K, fn: E[K]): void;
  emit<K extends keyof E>(type: K, ...args: Parameters<E[K]>): boolean;
}

export declare class Channel extends TypedEmitter<ChannelEvents> {
  readonly name: string;
  readonly joined: boolean;
  readonly lastSeq: number | null;
  readonly members: string[];
  join(opts?: { since?: number }): Promise<JoinInfo>;
  leave(): Promise<void>;
  publish(body: Json, opts?: { id?: string }): Promise<Ack>;
  setState(key: string, body: Json): void;
  clearState(key: string): void;
  up(body: Json): void;
  history(opts: { after?: number; before?: number; limit?: number }): Promise<Array<MsgFrame | ModerationFrame>>;
  edit(target: number, body: Json): Promise<{ seq: number; target: number }>;
  delete(target: number): Promise<{ seq: number; target: number }>;
}

export declare class ParleyClient extends TypedEmitter<ClientEvents> {
  constructor(opts: ClientOptions);
  readonly state: 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';
  readonly welcome: Welcome | null;
  readonly user: string | null;
  readonly conn: string | null;
  readonly encoding: 'json' | 'msgpack';
  connect(): Promise<Welcome>;
  close(): void;
  channel(name: string): Channel;
  join(name: string, opts?: { since?: number }): Promise<JoinInfo>;
  /** Round trip of a ping, ms; its pong's `ts` feeds `clock`. */
  ping(): Promise<number>;
  /** The best estimate of the server's clock from pongs, or null before the first pong with `ts`. */
  readonly clock: ClockEstimate | null;
  /** The server's time now (ms since the epoch) as estimated, or null without an estimate. */
  serverNow(): number | null;
  /** A server time (a state's `ts`) as local Date.now() time, or null without an estimate. */
  toLocalTime(serverTs: number): number | null;
  request(frame: Record<string, Json>, opts?: { retry?: boolean; timeoutMs?: number }): Promise<Record<string, Json>>;
}

export declare function backoffDelay(
  attempt: number,
  opts: Required<ReconnectOptions>,
  random?: () => number,
): number;
export declare function withJitter(ms: number, fraction: number, random?: () => number): number;

/** {"$bin": standard padded base64 of `bytes`}: a binary value of a body (MessagePack `bin`, JSON `$bin`). */
export declare function bin(bytes: Uint8Array | ArrayBuffer | ArrayLike<number>): { $bin: string };
/** The bytes of a {"$bin": canonical base64} value, or null for anything else. */
export declare function binBytes(value: unknown): Uint8Array | null;
/**
 * PROTOCOL.md's delta rule: `base` without the keys of `unset`, then every
 * field of `set` (a new object). Throws a TypeError on anything but objects
 * and an array of strings.
 */
export declare function applyStateDelta(base: { [key: string]: Json }, set: { [key: string]: Json },
  unset?: string[]): { [key: string]: Json };
