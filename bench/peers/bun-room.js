// Peer: a Bun pub/sub room server (ws.subscribe / server.publish, uWebSockets under
// it). Same adapter protocol as node-ws-room.js (bench/README.md).
// Usage: bun bun-room.js [port]   (listens on 127.0.0.1, path /v1/ws)
const port = Number(process.argv[2] || process.env.PORT || 7720);
const seqs = new Map(); // room -> last seq
let nextConn = 1;

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  fetch(req, srv) {
    if (new URL(req.url).pathname === '/v1/ws' &&
        srv.upgrade(req, { data: { conn: 'c' + nextConn++, user: null, joined: new Set() } })) return;
    return new Response('not found', { status: 404 });
  },
  websocket: {
    perMessageDeflate: false,
    message(ws, data) {
      let m;
      try { m = JSON.parse(data); } catch { return ws.send(JSON.stringify({ op: 'error', code: 'bad_request', msg: 'not JSON' })); }
      const rid = m.rid;
      const d = ws.data;
      const send = (obj) => ws.send(JSON.stringify(obj));
      if (m.op !== 'hello' && !d.user) return send({ op: 'error', rid, code: 'unauthorized', msg: 'hello first' });
      switch (m.op) {
        case 'hello':
          d.user = 'u-' + d.conn;
          return send({ op: 'welcome', rid, conn: d.conn, user: d.user, tenant: 'peer', heartbeat_ms: 25000 });
        case 'join':
          ws.subscribe(m.ch);
          d.joined.add(m.ch);
          return send({ op: 'joined', rid, ch: m.ch, seq: seqs.get(m.ch) || 0, recovered: false });
        case 'leave':
          ws.unsubscribe(m.ch);
          d.joined.delete(m.ch);
          return send({ op: 'left', rid, ch: m.ch });
        case 'pub': {
          if (!d.joined.has(m.ch)) return send({ op: 'error', rid, code: 'forbidden', msg: 'not joined' });
          const seq = (seqs.get(m.ch) || 0) + 1;
          seqs.set(m.ch, seq);
          send({ op: 'ack', rid, ch: m.ch, id: m.id, seq, dup: false });
          // server.publish reaches every subscriber, the publisher included.
          server.publish(m.ch, JSON.stringify({ op: 'msg', ch: m.ch, seq, from: d.user, id: m.id, ts: Date.now(), body: m.body }));
          return;
        }
        case 'state':
          if (!d.joined.has(m.ch)) return send({ op: 'error', rid, code: 'forbidden', msg: 'not joined' });
          // ws.publish skips the sender, as Parley does for state.
          ws.publish(m.ch, JSON.stringify({ op: 'state', ch: m.ch, from: d.user, key: m.key, body: m.body }));
          return;
        case 'ping':
          return send({ op: 'pong', rid });
        default:
          return send({ op: 'error', rid, code: 'bad_request', msg: 'unknown op' });
      }
    },
  },
});
console.log(`bun-room listening on 127.0.0.1:${server.port}`);
