// The way back (issue 13): an app server broadcasting into a world and messaging
// users at a high rate. One run drives one path as fast as its window allows for
// --duration seconds and reports messages/s, the server's CPU per message (from
// /proc/PID/stat), this client's CPU, the answer latency (pub -> ack, request ->
// response) and the delivery latency to the world's members (send -> received; the
// members live in this process, so one clock).
//
//   node bench/worlds/way_back.mjs --mode MODE --http HOST:PORT [--tcp HOST:PORT]
//        --api-key K --secret S --server-pid PID [--duration 10] [--members 100]
//        [--window 64] [--conns 4] [--batch 50] [--ch world:wayback] [--json FILE]
//
// MODE:
//   socket      one raw TCP connection (PROTOCOL.md transports), hello with the
//               api_key, join the world, then `pub` with up to --window unacknowledged
//   http        POST /v1/publish, one message per request, --conns keep-alive
//               connections with one request in flight each
//   http-batch  POST /v1/publish with a JSON array of --batch messages per request
//   http-send   POST /v1/send {"user"} to the members in turn, one per request
//   http-send-batch  POST /v1/send with an array of --batch sends per request
// Members: --members WebSocket clients (users m0, m1, ...) joined to --ch.
import { createHmac } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { loadWs } from '../ws_module.mjs';

const WebSocket = loadWs();

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const opt = {
  mode: args.mode ?? 'socket',
  http: args.http ?? '127.0.0.1:7700',
  tcp: args.tcp ?? '127.0.0.1:7701',
  apiKey: args['api-key'] ?? 'demo-api-key',
  secret: args.secret ?? 'demo-secret-change-me-0123456789',
  tenant: args.tenant ?? 'demo',
  pid: Number(args['server-pid'] ?? 0),
  duration: Number(args.duration ?? 10),
  members: Number(args.members ?? 100),
  window: Number(args.window ?? 64),
  conns: Number(args.conns ?? 4),
  batch: Number(args.batch ?? 50),
  ch: args.ch ?? `world:wayback-${process.pid}`,
  json: args.json,
};
const MODES = ['socket', 'http', 'http-batch', 'http-send', 'http-send-batch'];
if (!MODES.includes(opt.mode)) throw new Error(`--mode is one of ${MODES.join(', ')}`);

const nowNs = () => process.hrtime.bigint();
const hostPort = (s) => { const i = s.lastIndexOf(':'); return [s.slice(0, i), Number(s.slice(i + 1))]; };

// Log-bucketed latency histogram in microseconds (~3 % error), enough for p50/p99.
class Hist {
  counts = new Map();
  n = 0;
  add(us) {
    const b = us < 1 ? 0 : Math.round(Math.log(us) * 32);
    this.counts.set(b, (this.counts.get(b) ?? 0) + 1);
    this.n++;
  }
  pct(p) {
    if (!this.n) return 0;
    const keys = [...this.counts.keys()].sort((a, b) => a - b);
    let seen = 0;
    for (const k of keys) {
      seen += this.counts.get(k);
      if (seen >= this.n * p / 100) return Math.exp(k / 32) / 1000;  // ms
    }
    return 0;
  }
}

function b64url(buf) {
  return Buffer.from(buf).toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
}
function token(user) {
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = b64url(JSON.stringify({ sub: user, tenant: opt.tenant, exp: Math.floor(Date.now() / 1000) + 3600 }));
  return `${head}.${claims}.${b64url(createHmac('sha256', opt.secret).update(`${head}.${claims}`).digest())}`;
}

const serverCpuS = () => {
  if (!opt.pid) return 0;
  const f = readFileSync(`/proc/${opt.pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100;  // utime + stime, CLK_TCK 100
};

// --- the world's members -------------------------------------------------------
const delivery = new Hist();
let received = 0;
let measuring = false;
function onDelivered(body) {
  if (!measuring || !body || typeof body.t !== 'string') return;
  received++;
  delivery.add(Number(nowNs() - BigInt(body.t)) / 1000);
}
async function startMembers() {
  const [h, p] = hostPort(opt.http);
  const conns = [];
  await Promise.all(Array.from({ length: opt.members }, (_, i) => new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${h}:${p}/v1/ws`);
    conns.push(ws);
    ws.on('open', () => ws.send(JSON.stringify({ op: 'hello', v: 1, token: token(`m${i}`), rid: 1 })));
    ws.on('error', reject);
    ws.on('message', (data) => {
      let v = JSON.parse(data.toString());
      for (const f of Array.isArray(v) ? v : [v]) {
        if (f.op === 'welcome') ws.send(JSON.stringify({ op: 'join', ch: opt.ch, rid: 2 }));
        else if (f.op === 'joined') resolve();
        else if (f.op === 'msg' || f.op === 'direct') onDelivered(f.body);
        else if (f.op === 'error') reject(new Error(`member m${i}: ${JSON.stringify(f)}`));
      }
    });
  })));
  return conns;
}

// --- the app server's side -----------------------------------------------------
const answer = new Hist();
let sent = 0;       // messages accepted (acked, or answered 2xx)
let failed = 0;
let stop = false;
let seq = 0;
const body = () => ({ t: String(nowNs()), kind: 'world-update', n: ++seq });

// One raw TCP connection: 4-byte big-endian length + JSON (PROTOCOL.md).
async function runSocket() {
  const [h, p] = hostPort(opt.tcp);
  const sock = net.connect(p, h);
  sock.setNoDelay(true);
  await new Promise((r, j) => { sock.once('connect', r); sock.once('error', j); });
  const frame = (obj) => {
    const s = Buffer.from(JSON.stringify(obj));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(s.length);
    return Buffer.concat([head, s]);
  };
  const inflight = new Map();  // rid -> sent ns
  let buf = Buffer.alloc(0);
  let onReady;
  const ready = new Promise((r) => { onReady = r; });
  let rid = 10;
  const pump = () => {
    let out = [];
    while (!stop && inflight.size < opt.window) {
      const r = ++rid;
      inflight.set(r, nowNs());
      out.push(frame({ op: 'pub', ch: opt.ch, id: `wb${r}`, body: body(), rid: r }));
    }
    if (out.length) sock.write(Buffer.concat(out));
  };
  sock.on('data', (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    let off = 0;
    while (buf.length - off >= 4) {
      const n = buf.readUInt32BE(off);
      if (buf.length - off - 4 < n) break;
      const v = JSON.parse(buf.toString('utf8', off + 4, off + 4 + n));
      off += 4 + n;
      for (const f of Array.isArray(v) ? v : [v]) {
        if (f.op === 'welcome') sock.write(frame({ op: 'join', ch: opt.ch, rid: 2 }));
        else if (f.op === 'joined') onReady();
        else if (f.op === 'ack') {
          const t0 = inflight.get(f.rid);
          inflight.delete(f.rid);
          if (measuring) { sent++; answer.add(Number(nowNs() - t0) / 1000); }
        } else if (f.op === 'error') {
          inflight.delete(f.rid);
          failed++;
          if (failed < 5) console.error('socket error frame', JSON.stringify(f));
        }
      }
    }
    buf = off === buf.length ? Buffer.alloc(0) : buf.subarray(off);
    pump();
  });
  sock.write(frame({ op: 'hello', v: 1, api_key: opt.apiKey, rid: 1 }));
  await ready;
  return { start: pump, close: () => sock.destroy() };
}

// Keep-alive HTTP/1.1 over a raw socket: one request in flight, Content-Length
// answers (Parley's), so the client's own cost stays small.
function httpConn(makeRequest) {
  const [h, p] = hostPort(opt.http);
  const sock = net.connect(p, h);
  sock.setNoDelay(true);
  let buf = '';
  let t0 = 0n;
  let count = 0;
  const next = () => {
    if (stop) return;
    const [path, payload, n] = makeRequest();
    count = n;
    t0 = nowNs();
    sock.write(`POST ${path} HTTP/1.1\r\nHost: ${h}\r\nAuthorization: Bearer ${opt.apiKey}\r\n` +
               `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  };
  sock.on('data', (d) => {
    buf += d.toString('latin1');
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length:\s*(\d+)/i.exec(buf.slice(0, end));
      const len = m ? Number(m[1]) : 0;
      if (buf.length < end + 4 + len) return;
      const status = Number(buf.slice(9, 12));
      const resBody = buf.slice(end + 4, end + 4 + len);
      buf = buf.slice(end + 4 + len);
      if (measuring) {
        if (status === 200 && !/"code"/.test(resBody)) { sent += count; answer.add(Number(nowNs() - t0) / 1000); }
        else { failed += count; if (failed < 5) console.error('http', status, resBody.slice(0, 200)); }
      }
      next();
    }
  });
  sock.on('error', (e) => { if (!stop) console.error('http socket', e.message); });
  return new Promise((r, j) => {
    sock.once('connect', () => r({ start: next, close: () => sock.destroy() }));
    sock.once('error', j);
  });
}

let memberCursor = 0;
const nextUser = () => `m${memberCursor++ % Math.max(1, opt.members)}`;
const requests = {
  http: () => ['/v1/publish', JSON.stringify({ ch: opt.ch, body: body() }), 1],
  'http-batch': () => ['/v1/publish', JSON.stringify(Array.from({ length: opt.batch }, () => ({ ch: opt.ch, body: body() }))), opt.batch],
  'http-send': () => ['/v1/send', JSON.stringify({ user: nextUser(), body: body() }), 1],
  'http-send-batch': () => ['/v1/send', JSON.stringify(Array.from({ length: opt.batch }, () => ({ user: nextUser(), body: body() }))), opt.batch],
};

const members = await startMembers();
let drivers;
if (opt.mode === 'socket') drivers = [await runSocket()];
else drivers = await Promise.all(Array.from({ length: opt.conns }, () => httpConn(requests[opt.mode])));

// One second of warm-up, then the measured phase.
for (const d of drivers) d.start();
await new Promise((r) => setTimeout(r, 1000));
measuring = true;
const cpu0 = serverCpuS();
const own0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, opt.duration * 1000));
const secs = (performance.now() - t0) / 1000;
const cpu1 = serverCpuS();
const own1 = process.cpuUsage(own0);
measuring = false;
stop = true;
await new Promise((r) => setTimeout(r, 300));
for (const d of drivers) d.close();
for (const m of members) m.terminate();

const srv = cpu1 - cpu0;
const own = (own1.user + own1.system) / 1e6;
const perMember = opt.mode.startsWith('http-send') ? 1 : opt.members;
const r = {
  mode: opt.mode, window: opt.mode === 'socket' ? opt.window : opt.conns,
  batch: opt.mode.endsWith('batch') ? opt.batch : 1, members: opt.members, seconds: secs,
  msgs_per_s: sent / secs, failed, server_cpu_s: srv,
  server_us_per_msg: sent ? (srv * 1e6) / sent : 0,
  deliveries_per_s: received / secs, expected_deliveries_per_s: (sent * perMember) / secs,
  client_cpu_s: own,
  answer_p50_ms: answer.pct(50), answer_p99_ms: answer.pct(99),
  delivery_p50_ms: delivery.pct(50), delivery_p99_ms: delivery.pct(99),
};
console.log(`${r.mode.padEnd(16)} window ${String(r.window).padStart(3)} batch ${String(r.batch).padStart(3)}: ` +
  `${r.msgs_per_s.toFixed(0).padStart(7)} msgs/s, server ${r.server_cpu_s.toFixed(2)} CPU-s = ${r.server_us_per_msg.toFixed(2)} us/msg, ` +
  `client ${r.client_cpu_s.toFixed(2)} CPU-s, answer p50/p99 ${r.answer_p50_ms.toFixed(2)}/${r.answer_p99_ms.toFixed(2)} ms, ` +
  `delivered ${r.deliveries_per_s.toFixed(0)}/s (of ${r.expected_deliveries_per_s.toFixed(0)}) p50/p99 ${r.delivery_p50_ms.toFixed(2)}/${r.delivery_p99_ms.toFixed(2)} ms, failed ${failed}`);
if (opt.json) writeFileSync(opt.json, JSON.stringify(r, null, 1) + '\n');
process.exit(0);
