// A scripted server behind a WebSocket stand-in (passed as the client's
// `WebSocket` option): it answers hello with welcome and join with joined
// (`joinedSeq`) at once; every other request waits in `requests` for the
// caller, which writes whatever server frames it chooses, in any order, with
// push(). For the orders a real server produces only by chance (sdk/js
// tests) and for feeding frames without a network (sdk/js/bench). With
// `encoding: 'msgpack'` it speaks MessagePack (the client must be given the
// same `encoding`): it decodes what the client sends and encodes what it pushes.
// `caps` is what its welcome grants of what the hello asked for (PROTOCOL.md
// "State deltas"); every hello and join the client sent is kept (`hellos`, `joins`).
import { jsonCodec } from '../../src/codec.js';
import { msgpackCodec } from '../../src/msgpack_codec.js';
import { encode } from '@msgpack/msgpack';

export function scriptedServer({ joinedSeq = 0, encoding = 'json', caps = [] } = {}) {
  const codec = encoding === 'msgpack' ? msgpackCodec : jsonCodec;
  const net = { sock: null, requests: [], waiters: [], hellos: [], joins: [] };
  class ScriptedSocket {
    constructor() {
      this.readyState = 0;
      net.sock = this;
      queueMicrotask(() => {
        this.readyState = 1;
        this.onopen?.({});
      });
    }

    send(data) {
      const f = codec.decode(data);
      if (f.op === 'hello') {
        net.hellos.push(f);
        const welcome = { op: 'welcome', rid: f.rid, conn: 'c1', user: 'u', tenant: 'demo', heartbeat_ms: 25000 };
        const granted = (f.caps ?? []).filter((c) => caps.includes(c));
        if (granted.length) welcome.caps = granted;
        return this.push(welcome);
      }
      if (f.op === 'join') {
        net.joins.push(f);
        return this.push({ op: 'joined', rid: f.rid, ch: f.ch, seq: joinedSeq, recovered: true });
      }
      net.requests.push(f);
      for (const w of net.waiters.splice(0)) w();
    }

    /** Delivers a server frame (an object or an array of them) on the next microtask. */
    push(frame) {
      queueMicrotask(() => this.onmessage?.({ data: net.encode(frame) }));
    }

    close() {
      this.readyState = 3;
    }
  }
  net.WebSocket = ScriptedSocket;
  /** A server frame's bytes as the socket would deliver them (JSON text, or MessagePack). */
  net.encode = (frame) => (encoding === 'msgpack' ? encode(frame) : JSON.stringify(frame));
  /** The next request the client sent (other than hello and join), within `ms`. */
  net.request = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    while (!net.requests.length) {
      if (Date.now() > deadline) throw new Error('the client sent no request');
      await new Promise((r) => {
        net.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return net.requests.shift();
  };
  return net;
}
