// Resume across server-side drops, against the real server: a kill -9 and a
// restart on the same port and data (embedded store), a drain (`bye` with
// reconnect_ms), a non-durable channel whose log starts over, and a gap that
// history no longer holds. Throughout: every publish is acknowledged exactly
// once in call order, and subscribers get every message in seq order, no gaps.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { ParleyClient } from '../src/index.js';
import { ParleyServer, demoTenant, freePort, token, until, sleep } from './support/server.mjs';

const FAST = { minMs: 50, maxMs: 400, factor: 2 };
const clients = [];
const servers = [];

after(async () => {
  for (const c of clients) c.close();
  for (const s of servers) await s.dispose();
});

async function serverOnFixedPort(opts = {}) {
  const s = new ParleyServer({ port: await freePort(), ...opts });
  servers.push(s);
  await s.start();
  return s;
}

function client(server, user, opts = {}) {
  const c = new ParleyClient({ url: server.url, token: token(user), WebSocket, reconnect: FAST, ...opts });
  clients.push(c);
  return c;
}

function range(from, to) {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

test('kill -9 and restart mid-stream: publishes resent once, subscriber resumes with no gap', async () => {
  const server = await serverOnFixedPort();
  const pub = client(server, 'p-kill');
  const sub = client(server, 's-kill');
  const drops = { pub: 0, sub: 0 };
  pub.on('disconnect', () => drops.pub++);
  sub.on('disconnect', () => drops.sub++);
  const subCh = sub.channel('chat:kill');
  const got = [];
  subCh.on('msg', (m) => got.push(m));
  await subCh.join();
  const pubCh = pub.channel('chat:kill');
  await pubCh.join();

  const N = 400;
  const acks = [];
  const all = Promise.all(
    range(0, N - 1).map((i) => pubCh.publish({ i }).then((a) => (acks[i] = a))),
  );
  await until(() => acks.filter(Boolean).length >= 120, 10000, '120 acks');
  await server.stop('SIGKILL');
  await sleep(300); // clients retry against a closed port meanwhile
  await server.start();
  await all;

  assert.ok(drops.pub >= 1 && drops.sub >= 1, 'both clients saw the drop');
  // In call order, one seq each, no seq skipped or reused.
  assert.deepEqual(acks.map((a) => a.seq), range(1, N));
  await until(() => got.length === N, 10000, `${N} msgs`);
  assert.deepEqual(got.map((m) => m.seq), range(1, N));
  assert.deepEqual(got.map((m) => m.body.i), range(0, N - 1));
  assert.deepEqual(got.map((m) => m.id), acks.map((a) => a.id));
  // The server stored each once.
  const stored = [];
  for (let after = 0; ; ) {
    const r = await server.api('GET', `/v1/history?ch=chat:kill&after=${after}&limit=1000`);
    if (!r.body.msgs.length) break;
    stored.push(...r.body.msgs);
    after = r.body.msgs.at(-1).seq;
  }
  assert.equal(stored.length, N);
});

test('a drain: bye with reconnect_ms is honoured, then everything resumes in order', async () => {
  const server = await serverOnFixedPort();
  const pub = client(server, 'p-drain');
  const sub = client(server, 's-drain');
  const byes = [];
  const subDisconnects = [];
  let byeAt = 0;
  let reopenedAt = 0;
  sub.on('bye', (b) => {
    byes.push(b);
    byeAt = Date.now();
  });
  sub.on('disconnect', (d) => subDisconnects.push(d));
  sub.on('open', () => {
    if (byeAt) reopenedAt = Date.now();
  });
  const subCh = sub.channel('chat:drain');
  const got = [];
  subCh.on('msg', (m) => got.push(m));
  await subCh.join();
  const pubCh = pub.channel('chat:drain');
  await pubCh.join();

  const N = 300;
  const acks = [];
  const all = Promise.all(range(0, N - 1).map((i) => pubCh.publish({ i }).then((a) => (acks[i] = a))));
  await until(() => acks.filter(Boolean).length >= 100, 10000, '100 acks');
  const exit = await server.stop('SIGTERM');
  assert.equal(exit.code, 0, 'a drain exits 0');
  await server.start();
  await all;

  assert.equal(byes.length, 1);
  assert.equal(byes[0].code, 'draining');
  const reconnectMs = byes[0].reconnect_ms;
  assert.ok(reconnectMs > 0);
  const d = subDisconnects.find((x) => x.willReconnect);
  assert.ok(d.delayMs >= reconnectMs && d.delayMs <= reconnectMs * 1.5, `delay ${d.delayMs}`);
  assert.ok(reopenedAt - byeAt >= reconnectMs - 20, `reconnected after ${reopenedAt - byeAt} ms`);
  assert.deepEqual(acks.map((a) => a.seq), range(1, N));
  await until(() => got.length === N, 10000, `${N} msgs`);
  assert.deepEqual(got.map((m) => m.seq), range(1, N));
  assert.deepEqual(got.map((m) => m.body.i), range(0, N - 1));
});

test('a non-durable channel restarted from zero is reported as a reset, then delivers again', async () => {
  const server = await serverOnFixedPort();
  const pub = client(server, 'p-reset');
  const sub = client(server, 's-reset');
  const subCh = sub.channel('world:reset');
  const got = [];
  const resets = [];
  subCh.on('msg', (m) => got.push(m.seq));
  subCh.on('reset', (r) => resets.push(r));
  await subCh.join();
  const pubCh = pub.channel('world:reset');
  await pubCh.join();
  for (let i = 0; i < 3; i++) await pubCh.publish({ i });
  await until(() => got.length === 3, 5000, '3 msgs');
  await server.stop('SIGKILL');
  await server.start();
  await until(() => resets.length === 1, 10000, 'reset');
  assert.deepEqual(resets[0], { ch: 'world:reset', lastSeq: 3, seq: 0 });
  await until(() => pubCh.joined, 10000, 'the publisher rejoined');
  const ack = await pubCh.publish({ after: true });
  assert.equal(ack.seq, 1);
  await until(() => got.length === 4, 5000, 'the new msg');
  assert.deepEqual(got, [1, 2, 3, 1]);
});

// A WebSocket whose sockets the test can cut, like a network drop.
function cuttable() {
  const sockets = [];
  class CuttableWebSocket extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
    }
  }
  return { WebSocket: CuttableWebSocket, cut: () => sockets.at(-1).terminate() };
}

test('messages history no longer holds are reported as one gap; the rest arrive in order', async () => {
  const server = await serverOnFixedPort({
    tenants: demoTenant({ more: '\n[tenants.demo.namespaces.short]\ndurable = false\nhistory = 5\n' }),
  });
  const net = cuttable();
  let gate = Promise.resolve();
  const sub = client(server, 's-gap', {
    WebSocket: net.WebSocket,
    url: async () => {
      await gate;
      return server.url;
    },
  });
  const pub = client(server, 'p-gap');
  const subCh = sub.channel('short:gap');
  const got = [];
  const gaps = [];
  subCh.on('msg', (m) => got.push(m.seq));
  subCh.on('gap', (g) => gaps.push(g));
  let joinedInfo = null;
  subCh.on('joined', (j) => (joinedInfo = j));
  await subCh.join();
  const pubCh = pub.channel('short:gap');
  await pubCh.join();
  for (let i = 0; i < 3; i++) await pubCh.publish({ i });
  await until(() => got.length === 3, 5000, '3 msgs');
  let open;
  gate = new Promise((r) => (open = r));
  net.cut();
  await until(() => sub.state === 'waiting' || sub.state === 'connecting', 5000, 'the drop');
  // Seqs 4..103 while it is away: far more than the namespace's history of 5,
  // so the store trims (store_policy.h) and the oldest of them are gone.
  for (let i = 3; i < 103; i++) await pubCh.publish({ i });
  const kept = await server.api('GET', '/v1/history?ch=short:gap&after=0&limit=1000');
  const oldest = kept.body.msgs[0].seq;
  assert.ok(oldest > 4 && oldest <= 99, `the store holds from seq ${oldest}`);
  open();
  await until(() => got.at(-1) === 103, 10000, 'seq 103');
  assert.equal(joinedInfo.recovered, false);
  assert.deepEqual(gaps, [{ ch: 'short:gap', from: 4, to: oldest - 1 }]);
  assert.deepEqual(got, [1, 2, 3, ...range(oldest, 103)]);
});

test('a gap the join backfill left is repaired from history, in order', async () => {
  // The backfill of a join has an allowance of 4 x max_queue_bytes; what is
  // older than that comes from `history`, which reaches further.
  const server = await serverOnFixedPort({ tenants: demoTenant({ extra: 'max_queue_bytes = 65536' }) });
  const net = cuttable();
  let gate = Promise.resolve();
  const sub = client(server, 's-repair', {
    WebSocket: net.WebSocket,
    url: async () => {
      await gate;
      return server.url;
    },
  });
  const pub = client(server, 'p-repair');
  const subCh = sub.channel('chat:repair');
  const got = [];
  const gaps = [];
  let recovered = null;
  subCh.on('msg', (m) => got.push(m.seq));
  subCh.on('gap', (g) => gaps.push(g));
  subCh.on('joined', (j) => (recovered = j.recovered));
  await subCh.join();
  const pubCh = pub.channel('chat:repair');
  await pubCh.join();
  await pubCh.publish({ first: true });
  await until(() => got.length === 1, 5000, 'first msg');
  let open;
  gate = new Promise((r) => (open = r));
  net.cut();
  await until(() => sub.state !== 'open', 5000, 'the drop');
  const pad = 'x'.repeat(2000);
  const N = 400; // ~800 KB missed, over the 256 KB allowance
  await Promise.all(range(1, N).map((i) => pubCh.publish({ i, pad })));
  open();
  await until(() => got.at(-1) === N + 1, 15000, `seq ${N + 1}`);
  assert.equal(recovered, false, 'the backfill alone could not recover everything');
  assert.deepEqual(gaps, []);
  assert.deepEqual(got, range(1, N + 1));
});
