// A deliberately faulty room server for the bench's audit test. It speaks the bench
// adapter protocol over raw TCP framing (4-byte big-endian length + JSON) with
// Node's own `net`, so the test needs no npm package. It is correct except for the
// faults asked for on the command line, each injected once, towards the second
// member of the first channel created:
//   drop     msg seq 5 is not sent to that member        -> 1 lost
//   dup      msg seq 10 is sent to it twice               -> 1 duplicate
//   reorder  msg seq 16 is sent to it before seq 15       -> 1 reorder
//   reuse    the first channel's 20th pub is acked and delivered at seq 19, which the
//            19th already had (a store that lost a write and gave its seq again)
//                                                         -> 1 lost
//   die      the process exits once the first channel reaches seq 30
// Usage: node faulty_server.js PORT [drop,dup,reorder,reuse,die]
'use strict';
const net = require('net');

const port = Number(process.argv[2]);
const faults = new Set((process.argv[3] || '').split(',').filter(Boolean));
const rooms = new Map();
let firstRoom = null;
let nextConn = 1;
let held = null;  // the reordered frame, waiting for the next one

function frame(obj) {
  const body = Buffer.from(JSON.stringify(obj));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

function deliver(room, seq, bytes) {
  room.members.forEach((sock, i) => {
    const victim = room === firstRoom && i === 1;
    if (victim && faults.has('drop') && seq === 5) return;
    if (victim && faults.has('dup') && seq === 10) sock.write(bytes);
    if (victim && faults.has('reorder') && seq === 15) { held = bytes; return; }
    sock.write(bytes);
    if (victim && held && seq === 16) { sock.write(held); held = null; }
  });
}

function handle(sock, m) {
  const rid = m.rid;
  switch (m.op) {
    case 'hello':
      sock.user = 'u-c' + nextConn++;
      return sock.write(frame({ op: 'welcome', rid, conn: sock.user, user: sock.user, tenant: 'test', heartbeat_ms: 25000 }));
    case 'join': {
      let room = rooms.get(m.ch);
      if (!room) { rooms.set(m.ch, (room = { seq: 0, members: [] })); if (!firstRoom) firstRoom = room; }
      room.members.push(sock);
      sock.rooms.add(m.ch);
      return sock.write(frame({ op: 'joined', rid, ch: m.ch, seq: room.seq, recovered: false }));
    }
    case 'pub': {
      const room = rooms.get(m.ch);
      if (!room || !sock.rooms.has(m.ch)) return sock.write(frame({ op: 'error', rid, code: 'forbidden', msg: 'not joined' }));
      if (faults.has('die') && room === firstRoom && room.seq === 30) process.exit(0);
      const reuse = faults.has('reuse') && room === firstRoom && room.seq === 19 && !room.reused;
      if (reuse) room.reused = true;
      const seq = reuse ? room.seq : ++room.seq;
      sock.write(frame({ op: 'ack', rid, ch: m.ch, id: m.id, seq, dup: false }));
      return deliver(room, seq, frame({ op: 'msg', ch: m.ch, seq, from: sock.user, id: m.id, ts: Date.now(), body: m.body }));
    }
    case 'ping':
      return sock.write(frame({ op: 'pong', rid }));
    default:
      return sock.write(frame({ op: 'error', rid, code: 'bad_request', msg: 'unsupported op' }));
  }
}

net.createServer((sock) => {
  sock.setNoDelay(true);
  sock.rooms = new Set();
  let buf = Buffer.alloc(0);
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0);
      if (buf.length < 4 + len) break;
      const m = JSON.parse(buf.subarray(4, 4 + len).toString());
      buf = buf.subarray(4 + len);
      handle(sock, m);
    }
  });
  sock.on('error', () => {});
  sock.on('close', () => {
    for (const room of rooms.values()) room.members = room.members.filter((s) => s !== sock);
  });
}).listen(port, '127.0.0.1', () => console.log(`faulty server on ${port} faults=${[...faults]}`));
