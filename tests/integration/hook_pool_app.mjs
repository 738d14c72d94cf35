// The game's app server of tests/integration/hook_pool_test.cc: Node's own http
// module, kept-alive (as bench/hook_app.mjs and most studios' small services),
// answering each hook request after the delay its pub body asks for
// ({"delay":ms,"verdict":"deny"?}), and counting the connections it accepts
// and which one carried each request. A second port accepts connections and
// drops each at once (an app server that dies on every request); a third
// serves the counts, so that reading them is no connection of the hook's.
//   node hook_pool_app.mjs APP_PORT DROP_PORT STATS_PORT   (all on 127.0.0.1)
// Prints "ready" once the three listen. On the stats port:
//   GET /stats     {"connections","closed","drops"}
//   GET /requests  [{"conn","id","at","answered_at"?,"closed_at"?}] (ms since start)
import http from 'node:http';
import net from 'node:net';

const [appPort, dropPort, statsPort] = process.argv.slice(2).map(Number);
if (!appPort || !dropPort || !statsPort) {
  console.error('usage: node hook_pool_app.mjs APP_PORT DROP_PORT STATS_PORT');
  process.exit(2);
}
const t0 = performance.now();
const now = () => Math.round(performance.now() - t0);
const counts = { connections: 0, closed: 0, drops: 0 };
const requests = [];
let nextConn = 0;

const app = http.createServer((req, res) => {
  res.on('error', () => {});
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let ask = {};
    try {
      ask = JSON.parse(Buffer.concat(chunks));
    } catch {}
    const body = ask && typeof ask.body === 'object' && ask.body !== null ? ask.body : {};
    const rec = { conn: req.socket.hookConn, id: String(ask.id ?? ''), at: now() };
    requests.push(rec);
    const socket = req.socket;
    socket.hookAsked = rec;
    const answer = body.verdict === 'deny'
      ? { allow: false, code: 'forbidden', msg: 'denied late' }
      : { allow: true };
    setTimeout(() => {
      if (socket.destroyed) return;  // the server gave up on this connection
      rec.answered_at = now();
      const text = JSON.stringify(answer);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    }, Number(body.delay) || 0);
  });
});
app.on('connection', (s) => {
  s.hookConn = ++nextConn;
  counts.connections++;
  s.on('close', () => {
    counts.closed++;
    if (s.hookAsked && s.hookAsked.answered_at === undefined) s.hookAsked.closed_at = now();
  });
});
// The pool decides when its connections close; no timeout of Node's may.
app.keepAliveTimeout = 0;
app.requestTimeout = 0;
app.headersTimeout = 0;

const drop = net.createServer((s) => {
  counts.drops++;
  s.destroy();
});

const stats = http.createServer((req, res) => {
  const text = req.url === '/requests' ? JSON.stringify(requests) : JSON.stringify(counts);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
});

let up = 0;
const listening = () => { if (++up === 3) console.log('ready'); };
app.listen(appPort, '127.0.0.1', listening);
drop.listen(dropPort, '127.0.0.1', listening);
stats.listen(statsPort, '127.0.0.1', listening);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
