// Test clients of PROTOCOL.md for the node tests, written against the page alone:
// JSON or MessagePack over WebSocket (the `ws` package, subprotocol
// parley.v1.msgpack) and over TCP (node:net, 4-byte length framing, hello with
// "enc":"msgpack"). Each keeps the server objects it received, batches split, in
// arrival order; `expect` takes the first that matches.
import http from 'node:http';
import net from 'node:net';
import assert from 'node:assert/strict';
import { decode, encode } from '@msgpack/msgpack';
import { WebSocket } from 'ws';

export const kStepTimeoutMs = 5000;

// A body as a JSON member sees it: bin becomes {"$bin": standard base64}.
export function asJson(v) {
  if (v instanceof Uint8Array) return { $bin: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return v.map(asJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asJson(x)]));
  return v;
}
export function jsonable(_k, v) { return v instanceof Uint8Array ? { bin: [...v] } : v; }

// The server's /metrics text.
export function fetchMetrics(httpPort) {
  return new Promise((resolve, reject) => {
    http.get(`http://127.0.0.1:${httpPort}/metrics`, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve(text));
    }).on('error', reject);
  });
}

// `fail(err)` ends the test (a frame of the wrong type, a socket error).
export function makeClients({ httpPort, tcpPort, fail }) {
  // One client: `encoding` is what it reads now ('json' or 'msgpack'); server
  // objects land in `inbox` in arrival order.
  class Client {
    constructor(name) {
      this.name = name;
      this.inbox = [];
      this.wake = null;
      this.closed = null;
      // What the socket carried since the handshake: every byte read (`raw`),
      // and per frame its bytes with framing and what it held (`frames`).
      this.raw = 0;
      this.frames = [];
    }

    take(value) {
      for (const obj of Array.isArray(value) ? value : [value]) this.inbox.push(obj);
      this.wake?.();
    }

    async expect(pred, what) {
      const deadline = Date.now() + kStepTimeoutMs;
      for (;;) {
        const i = this.inbox.findIndex(pred);
        if (i >= 0) return this.inbox.splice(i, 1)[0];
        if (this.closed) throw new Error(`${this.name}: closed (${this.closed}) waiting for ${what}`);
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new Error(`${this.name}: no ${what} within ${kStepTimeoutMs} ms; got ` +
            JSON.stringify(this.inbox, jsonable));
        }
        let timer;
        await new Promise((resolve) => {
          this.wake = resolve;
          timer = setTimeout(resolve, left);
        });
        clearTimeout(timer);
        this.wake = null;
      }
    }

    expectOp(op, rid) {
      return this.expect((o) => o.op === op && (rid === undefined || o.rid === rid),
        `"${op}"${rid === undefined ? '' : ` rid ${rid}`}`);
    }
  }

  class WsClient extends Client {
    constructor(name, encoding) {
      super(name);
      this.encoding = encoding;
      const protocols = encoding === 'msgpack' ? ['parley.v1.msgpack'] : [];
      this.ws = new WebSocket(`ws://127.0.0.1:${httpPort}/v1/ws`, protocols);
      this.ws.on('message', (data, isBinary) => {
        if (isBinary !== (this.encoding === 'msgpack')) {
          return fail(new Error(`${name}: a ${isBinary ? 'binary' : 'text'} frame on a ${this.encoding} connection`));
        }
        const value = isBinary ? decode(data) : JSON.parse(data.toString('utf8'));
        // A server frame is unmasked: 2 header bytes, +2 from 126 bytes, +8 from 64 KiB.
        const n = data.length;
        this.frames.push({ wire: n + (n < 126 ? 2 : n < 65536 ? 4 : 10), value });
        this.take(value);
      });
      this.ws.on('close', (code) => { this.closed = code; this.wake?.(); });
      this.ws.on('error', (e) => fail(e));
    }

    async open() {
      await new Promise((resolve, reject) => {
        this.ws.once('open', () => {
          this.ws._socket.on('data', (chunk) => { this.raw += chunk.length; });
          resolve();
        });
        this.ws.once('unexpected-response', (_q, res) => reject(new Error(`handshake ${res.statusCode}`)));
      });
      const want = this.encoding === 'msgpack' ? 'parley.v1.msgpack' : '';
      assert.equal(this.ws.protocol, want, `${this.name}: selected subprotocol`);
    }

    send(obj) { this.ws.send(this.encoding === 'msgpack' ? encode(obj) : JSON.stringify(obj)); }
    sendRaw(data, binary) { this.ws.send(data, { binary }); }
  }

  class TcpClient extends Client {
    constructor(name) {
      super(name);
      this.encoding = 'json';  // until a welcome says otherwise
      this.buf = Buffer.alloc(0);
      this.sock = net.connect(Number(tcpPort), '127.0.0.1');
      this.sock.on('data', (chunk) => {
        this.raw += chunk.length;
        this.buf = Buffer.concat([this.buf, chunk]);
        while (this.buf.length >= 4) {
          const n = this.buf.readUInt32BE(0);
          if (this.buf.length < 4 + n) break;
          const payload = this.buf.subarray(4, 4 + n);
          this.buf = this.buf.subarray(4 + n);
          const value = this.encoding === 'msgpack' ? decode(payload) : JSON.parse(payload.toString('utf8'));
          // The JSON welcome that switches the connection: later frames are MessagePack.
          if (!Array.isArray(value) && value.op === 'welcome' && value.enc === 'msgpack') this.encoding = 'msgpack';
          this.frames.push({ wire: 4 + n, value });
          this.take(value);
        }
      });
      this.sock.on('close', () => { this.closed = 'socket closed'; this.wake?.(); });
      this.sock.on('error', (e) => fail(e));
    }

    async open() { await new Promise((resolve) => this.sock.once('connect', resolve)); }

    send(obj) {
      const payload = this.encoding === 'msgpack' ? Buffer.from(encode(obj)) : Buffer.from(JSON.stringify(obj));
      const head = Buffer.alloc(4);
      head.writeUInt32BE(payload.length);
      this.sock.write(Buffer.concat([head, payload]));
    }
  }

  return { Client, WsClient, TcpClient };
}
