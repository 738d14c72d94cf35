// The game's app server behind a `pub` hook (docs/PROTOCOL.md "Hooks"), for
// bench/hooks.sh: Node's own http module (what a studio's small service is most
// often built on; no framework), kept-alive connections, and per request the work
// every real hook handler does before its own rules: read the whole body, check the
// bearer key, JSON.parse it, check the fields it decides on, answer {"allow":true}.
// No rule beyond that, so its CPU is the floor of what a hook costs an app server.
//   node bench/hook_app.mjs unix:/path/app.sock|PORT API_KEY
// Prints {"pid","listen"} once listening. GET /stats: its counts (requests,
// allowed, refused: a request it could not take, which the bench reports;
// connections accepted: few, if Parley keeps them alive).
import http from 'node:http';
import fs from 'node:fs';

const [where, apiKey] = process.argv.slice(2);
if (!where || !apiKey) {
  console.error('usage: node hook_app.mjs unix:/path.sock|PORT API_KEY');
  process.exit(2);
}
const bearer = 'Bearer ' + apiKey;
const stats = { requests: 0, allowed: 0, refused: 0, bytes: 0, connections: 0 };
const ALLOW = Buffer.from('{"allow":true}');

function refuse(res, status, why) {
  stats.refused++;
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ error: why }));
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end(JSON.stringify(stats));
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    stats.requests++;
    if (req.method !== 'POST') return refuse(res, 405, 'POST only');
    if (req.headers.authorization !== bearer) return refuse(res, 401, 'bad key');
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    stats.bytes += raw.length;
    let ask;
    try {
      ask = JSON.parse(raw);
    } catch {
      return refuse(res, 400, 'not JSON');
    }
    if (ask.hook !== 'pub' || typeof ask.tenant !== 'string' || typeof ask.ch !== 'string' ||
        typeof ask.user !== 'string' || typeof ask.conn !== 'string' || ask.body === undefined)
      return refuse(res, 400, 'not a pub hook request');
    stats.allowed++;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': ALLOW.length });
    res.end(ALLOW);
  });
});
server.on('connection', () => stats.connections++);
// Parley keeps its hook connections open between runs: no idle timeout here.
server.keepAliveTimeout = 0;

const listening = () => console.log(JSON.stringify({ pid: process.pid, listen: where }));
if (where.startsWith('unix:')) {
  const path = where.slice('unix:'.length);
  try { fs.unlinkSync(path); } catch {}
  server.listen(path, listening);
} else {
  server.listen(Number(where), '127.0.0.1', listening);
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
