// FaultProxy: a TCP proxy between one SDK driver and the server, so faults are
// real network faults the SDK cannot tell from the wild: `cut()` resets every
// live connection, `stall()` stops forwarding on the live ones (a flow a NAT
// forgot: nothing passes, nothing closes), `slow(ms)` delays every chunk,
// `refuse()` resets each new connection at once (a server that is down), and
// `setTarget(port)` points new connections at a restarted server. Every
// accepted connection's time is recorded (`connects`), which is how the
// harness measures an SDK's reconnect delays from outside.
//
// Runs on the harness's Node event loop.
import { createServer, connect } from 'node:net';
import { performance } from 'node:perf_hooks';

// One direction of one connection: chunks are forwarded in order, each no
// sooner than `delayMs` after it was read, with the reader paused while the
// writer is full or the pair is stalled.
class Pipe {
  constructor(src, dst, pair) {
    this.src = src;
    this.dst = dst;
    this.pair = pair;
    this.queue = []; // [dueTime, chunk]
    this.timer = null;
    this.ended = false;
    src.on('data', (chunk) => {
      if (this === pair.down && pair.proxy.downRecord) pair.proxy.downRecord.push(chunk);
      this.queue.push([performance.now() + pair.proxy.delayMs, chunk]);
      this.flush();
    });
    src.on('end', () => {
      this.ended = true;
      this.flush();
    });
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.pair.stalled || this.dst.destroyed) {
      this.src.pause();
      return;
    }
    const now = performance.now();
    while (this.queue.length && this.queue[0][0] <= now) {
      const [, chunk] = this.queue.shift();
      if (!this.dst.write(chunk)) {
        this.src.pause();
        this.dst.once('drain', () => this.flush());
        return;
      }
    }
    if (this.queue.length) {
      this.src.pause();
      this.timer = setTimeout(() => this.flush(), this.queue[0][0] - now);
      return;
    }
    if (this.ended) {
      this.dst.end();
      return;
    }
    this.src.resume();
  }
}

class Pair {
  constructor(proxy, client) {
    this.proxy = proxy;
    this.client = client;
    this.stalled = false;
    this.upstream = connect({ host: '127.0.0.1', port: proxy.target });
    // The first bytes the client sends (a WebSocket upgrade request or a TCP
    // hello): what the harness reads a client's encoding from (`heads`).
    client.once('data', (chunk) => proxy.heads.push(chunk.subarray(0, 4096).toString('latin1')));
    this.up = new Pipe(client, this.upstream, this);
    this.down = new Pipe(this.upstream, client, this);
    const kill = () => this.reset();
    client.on('error', kill);
    this.upstream.on('error', kill);
    client.on('close', kill);
    this.upstream.on('close', (hadError) => {
      // The server closed its side: what it sent before still goes out first,
      // then the client's side ends. A reset here would also throw away what
      // the client socket still buffers (a bye behind a full queue, say).
      if (!hadError && !this.client.destroyed) {
        this.down.ended = true;
        this.down.flush();
      } else {
        kill();
      }
    });
  }

  reset() {
    clearTimeout(this.up.timer);
    clearTimeout(this.down.timer);
    for (const s of [this.client, this.upstream]) {
      if (s.destroyed) continue;
      // libuv forbids a reset after a shutdown (uv_tcp_close_reset); Node
      // then never finishes closing the handle and hangs at exit.
      if (s.readyState === 'open' && !s.writableEnded) s.resetAndDestroy();
      else s.destroy();
    }
    this.proxy.pairs.delete(this);
  }

  setStalled(on) {
    this.stalled = on;
    this.up.flush();
    this.down.flush();
  }
}

export class FaultProxy {
  constructor(targetPort) {
    this.target = targetPort;
    this.delayMs = 0;
    this.refusing = false;
    this.pairs = new Set();
    /** One entry per accepted connection: { t (performance.now()), refused }. */
    this.connects = [];
    /** The first chunk each forwarded connection's client sent, as latin1 text. */
    this.heads = [];
    /** With recordDown(): every chunk the server sent (any connection), in order. */
    this.downRecord = null;
    this.server = createServer((sock) => this.#accept(sock));
    this.port = 0;
  }

  /** Listens on 127.0.0.1:`port` (0: any); resolves with the port. */
  listen(port = 0) {
    return new Promise((resolveP, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.port = this.server.address().port;
        resolveP(this.port);
      });
    });
  }

  /** ws://… through this proxy. */
  get wsUrl() {
    return `ws://127.0.0.1:${this.port}/v1/ws`;
  }

  /** wss://… through this proxy (TLS passes through it end to end). */
  get wssUrl() {
    return `wss://localhost:${this.port}/v1/ws`;
  }

  get tcpUrl() {
    return `tcp://127.0.0.1:${this.port}`;
  }

  #accept(sock) {
    const t = performance.now();
    this.connects.push({ t, refused: this.refusing });
    if (this.refusing) {
      sock.on('error', () => {});
      sock.resetAndDestroy();
      return;
    }
    const pair = new Pair(this, sock);
    this.pairs.add(pair);
  }

  /**
   * The encoding a connection's first chunk asked for: the WebSocket
   * subprotocol `parley.v1.msgpack` or a TCP hello's `"enc":"msgpack"` is
   * msgpack; anything else readable is json; null for TLS (opaque here).
   */
  static encodingOf(head) {
    if (/^GET /.test(head)) return /^sec-websocket-protocol:[^\r]*parley\.v1\.msgpack/im.test(head) ? 'msgpack' : 'json';
    if (head.length > 4 && head[4] === '{') return /"enc"\s*:\s*"msgpack"/.test(head) ? 'msgpack' : 'json';
    return null;
  }

  /** Keeps what the server sends from now on (for scenarios that look at the frames' bytes). */
  recordDown() {
    this.downRecord ??= [];
  }

  /** How often `pattern` (latin1 text) occurs in what recordDown() kept. */
  countDown(pattern) {
    const all = Buffer.concat(this.downRecord ?? []);
    const needle = Buffer.from(pattern, 'latin1');
    let n = 0;
    for (let i = all.indexOf(needle); i >= 0; i = all.indexOf(needle, i + needle.length)) n++;
    return n;
  }

  setTarget(port) {
    this.target = port;
  }

  /** Resets every live connection (both sides see a reset, as after a network drop). */
  cut() {
    for (const p of [...this.pairs]) p.reset();
  }

  /** Stops forwarding on the live connections (new ones pass); `resume()` undoes it. */
  stall() {
    for (const p of this.pairs) p.setStalled(true);
  }

  resume() {
    for (const p of this.pairs) p.setStalled(false);
  }

  /** Every chunk, both ways, forwarded `ms` after it was read (0: at once). */
  slow(ms) {
    this.delayMs = ms;
  }

  /** New connections are reset as soon as they are accepted, until `accept()`. */
  refuse() {
    this.refusing = true;
  }

  accept() {
    this.refusing = false;
  }

  close() {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}
