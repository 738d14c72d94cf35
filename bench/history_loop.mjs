// A client that asks for `history` in a loop (one request in flight), for
// measuring what history costs the other clients of a server under load
// (bench/history_under_load.sh). Fills the channel first when it holds fewer
// than --fill messages. Prints one JSON line: replies, messages, CPU seconds.
//
// usage: node bench/history_loop.mjs --port P [--ch hist:big] [--fill 1000]
//          [--limit 1000] [--seconds 30] [--rate R] [--secret S] [--tenant demo]
// --rate R: at most R requests a second (0: as fast as replies come), so that two
// servers compared get the same history work.
import crypto from 'node:crypto';
import { loadWs } from './ws_module.mjs';

const WebSocket = loadWs();

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const port = Number(args.port ?? 7700);
const ch = args.ch ?? 'hist:big';
const fill = Number(args.fill ?? 1000);
const limit = Number(args.limit ?? 1000);
const seconds = Number(args.seconds ?? 30);
const rate = Number(args.rate ?? 0);
const secret = args.secret ?? 'demo-secret-change-me-0123456789';
const tenant = args.tenant ?? 'demo';

const b64 = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');
function token(sub) {
  const head = b64({ alg: 'HS256', typ: 'JWT' });
  const body = b64({ sub, tenant, exp: Math.floor(Date.now() / 1000) + 3600 });
  const sig = crypto.createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
const waiters = new Map();
let rid = 0;
function ask(op) {
  const id = ++rid;
  ws.send(JSON.stringify({ ...op, rid: id }));
  return new Promise((resolve) => waiters.set(id, resolve));
}
ws.on('message', (data) => {
  const v = JSON.parse(data.toString());
  if (Array.isArray(v)) return;
  const w = waiters.get(v.rid);
  if (w) { waiters.delete(v.rid); w(v); }
});
await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });

const welcome = await ask({ op: 'hello', v: 1, token: token('historian') });
if (welcome.op !== 'welcome') throw new Error(JSON.stringify(welcome));
const joined = await ask({ op: 'join', ch });
for (let s = joined.seq; s < fill; s += 100) {
  const acks = [];
  for (let i = s; i < Math.min(fill, s + 100); ++i) {
    acks.push(ask({ op: 'pub', ch, id: `h${i}`, body: { i, text: 'x'.repeat(150) } }));
  }
  for (const a of await Promise.all(acks)) {
    if (a.op !== 'ack') throw new Error(JSON.stringify(a));
  }
}

const cpu0 = process.cpuUsage();
const end = Date.now() + seconds * 1000;
let replies = 0, msgs = 0, errors = 0;
const start = Date.now();
while (Date.now() < end) {
  if (rate > 0) {
    const due = start + (replies + errors) * 1000 / rate;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
  }
  const r = await ask({ op: 'history', ch, before: Number.MAX_SAFE_INTEGER, limit });
  if (r.op === 'history') { ++replies; msgs += r.msgs.length; } else { ++errors; }
}
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ replies, msgs, errors, seconds,
  replies_per_s: replies / seconds, cpu_s: (cpu.user + cpu.system) / 1e6 }));
ws.close();
