// Peer: a naive broadcast room server on Node's `ws` package, the loop the world-proxy
// workload started from. It speaks the bench adapter protocol (bench/README.md): the
// subset of Parley's wire protocol v1 that the scenarios use, with no auth, no store.
// Usage: node node-ws-room.js [port]   (listens on 127.0.0.1, path /v1/ws)
'use strict';
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2] || process.env.PORT || 7710);
const rooms = new Map(); // name -> { seq, members: Set<ws> }
let nextConn = 1;

function room(name) {
  let r = rooms.get(name);
  if (!r) rooms.set(name, (r = { seq: 0, members: new Set() }));
  return r;
}

const send = (ws, obj) => ws.send(JSON.stringify(obj));

const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/v1/ws', perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.conn = 'c' + nextConn++;
  ws.user = null;
  ws.joined = new Set();
  ws.on('message', (data) => {
    let m;
    try { m = JSON.parse(data); } catch { return send(ws, { op: 'error', code: 'bad_request', msg: 'not JSON' }); }
    const rid = m.rid;
    if (m.op !== 'hello' && !ws.user) return send(ws, { op: 'error', rid, code: 'unauthorized', msg: 'hello first' });
    switch (m.op) {
      case 'hello':
        ws.user = 'u-' + ws.conn;
        return send(ws, { op: 'welcome', rid, conn: ws.conn, user: ws.user, tenant: 'peer', heartbeat_ms: 25000 });
      case 'join': {
        const r = room(m.ch);
        r.members.add(ws);
        ws.joined.add(m.ch);
        return send(ws, { op: 'joined', rid, ch: m.ch, seq: r.seq, recovered: false });
      }
      case 'leave':
        if (ws.joined.delete(m.ch)) room(m.ch).members.delete(ws);
        return send(ws, { op: 'left', rid, ch: m.ch });
      case 'pub': {
        if (!ws.joined.has(m.ch)) return send(ws, { op: 'error', rid, code: 'forbidden', msg: 'not joined' });
        const r = room(m.ch);
        const seq = ++r.seq;
        send(ws, { op: 'ack', rid, ch: m.ch, id: m.id, seq, dup: false });
        const frame = JSON.stringify({ op: 'msg', ch: m.ch, seq, from: ws.user, id: m.id, ts: Date.now(), body: m.body });
        for (const member of r.members) member.send(frame);  // the naive broadcast loop
        return;
      }
      case 'state': {
        if (!ws.joined.has(m.ch)) return send(ws, { op: 'error', rid, code: 'forbidden', msg: 'not joined' });
        const frame = JSON.stringify({ op: 'state', ch: m.ch, from: ws.user, key: m.key, body: m.body });
        for (const member of room(m.ch).members) if (member !== ws) member.send(frame);
        return;
      }
      case 'ping':
        return send(ws, { op: 'pong', rid });
      default:
        return send(ws, { op: 'error', rid, code: 'bad_request', msg: 'unknown op' });
    }
  });
  ws.on('close', () => {
    for (const ch of ws.joined) room(ch).members.delete(ws);
  });
});
wss.on('listening', () => console.log(`node-ws-room listening on 127.0.0.1:${port}`));
