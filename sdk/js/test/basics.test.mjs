// The SDK against the real server: hello, join, publish and its ack, messages
// in seq order (frames that are arrays and objects), presence, state
// streaming, history, direct messages and the errors that are not retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParleyError } from '../src/index.js';
import { serverForFile, demoTenant, until } from './support/server.mjs';

const file = serverForFile({
  tenants: demoTenant({ more: '\n[tenants.demo.namespaces.quiet]\npresence = false\n' }),
});
const { client } = file;

test('connect resolves with the welcome of PROTOCOL.md', async () => {
  const c = client('alice');
  const w = await c.connect();
  assert.equal(w.user, 'alice');
  assert.equal(w.tenant, 'demo');
  assert.match(w.conn, /^\S+$/);
  assert.ok(w.heartbeat_ms > 0);
  assert.equal(c.state, 'open');
});

test('a bad token is refused for good: connect rejects with unauthorized, no reconnect', async () => {
  const c = client('mallory', { token: 'not.a.jwt' });
  let disconnects = 0;
  c.on('disconnect', () => disconnects++);
  await assert.rejects(c.connect(), (e) => e instanceof ParleyError && e.code === 'unauthorized');
  assert.equal(c.state, 'closed');
  assert.equal(disconnects, 1);
});

test('publish is acked and every member gets the msgs in seq order, with no gaps', async () => {
  const a = client('pub-a');
  const b = client('sub-b');
  const ch = 'chat:order';
  const bCh = b.channel(ch);
  const got = [];
  bCh.on('msg', (m) => got.push(m));
  await bCh.join();
  const aCh = a.channel(ch);
  await aCh.join();
  const acks = await Promise.all(Array.from({ length: 50 }, (_, i) => aCh.publish({ n: i })));
  // maxInFlight 1: sequenced in call order.
  assert.deepEqual(acks.map((x) => x.seq), acks.map((_, i) => acks[0].seq + i));
  assert.ok(acks.every((x) => x.dup === false));
  await until(() => got.length === 50, 5000, '50 msgs');
  assert.deepEqual(got.map((m) => m.body.n), Array.from({ length: 50 }, (_, i) => i));
  assert.deepEqual(got.map((m) => m.seq), acks.map((x) => x.seq));
  assert.equal(got[0].from, 'pub-a');
  assert.equal(got[0].id, acks[0].id);
  assert.equal(bCh.lastSeq, acks[49].seq);
});

test('a publish with an explicit id that was already accepted acks dup with its first seq', async () => {
  const a = client('dup-a');
  const ch = a.channel('chat:dup');
  await ch.join();
  const first = await ch.publish({ x: 1 }, { id: 'fixed-1' });
  const again = await ch.publish({ x: 1 }, { id: 'fixed-1' });
  assert.deepEqual(again, { seq: first.seq, dup: true, id: 'fixed-1' });
});

test('presence and state: a member sees others join, stream state (latest wins) and leave', async () => {
  const a = client('walker');
  const b = client('watcher');
  const bCh = b.channel('world:1');
  const presence = [];
  const states = [];
  bCh.on('presence', (p) => presence.push(p));
  bCh.on('state', (s) => states.push(s));
  const joinedB = await bCh.join();
  assert.deepEqual(joinedB.members, ['watcher']);
  const aCh = a.channel('world:1');
  const joinedA = await aCh.join();
  assert.deepEqual(joinedA.members.sort(), ['walker', 'watcher']);
  await until(() => presence.length === 1, 5000, 'presence join');
  assert.deepEqual(presence[0], { ch: 'world:1', join: ['walker'], leave: [] });
  assert.deepEqual(bCh.members.sort(), ['walker', 'watcher']);
  for (let x = 0; x <= 20; x++) aCh.setState('pos', { x });
  await until(() => states.some((s) => s.body.x === 20), 5000, 'the latest state');
  assert.equal(states.at(-1).from, 'walker');
  assert.equal(states.at(-1).key, 'pos');
  // Coalesced by the server's tick: fewer frames than updates, the last one wins.
  assert.ok(states.length <= 21);
  a.close();
  await until(() => presence.length === 2, 5000, 'presence leave');
  assert.deepEqual(presence[1], { ch: 'world:1', join: [], leave: ['walker'] });
  assert.deepEqual(bCh.members, ['watcher']);
});

test('history pages stored messages oldest first', async () => {
  const a = client('historian');
  const ch = a.channel('chat:hist');
  await ch.join();
  for (let i = 0; i < 5; i++) await ch.publish({ i });
  const msgs = await ch.history({ after: 0, limit: 3 });
  assert.deepEqual(msgs.map((m) => m.seq), [1, 2, 3]);
  assert.deepEqual(msgs.map((m) => m.body.i), [0, 1, 2]);
  const older = await ch.history({ before: 5 });
  assert.deepEqual(older.map((m) => m.seq), [1, 2, 3, 4]);
});

test('POST /v1/send arrives as a direct event', async () => {
  const a = client('dm-target');
  await a.connect();
  const got = [];
  a.on('direct', (d) => got.push(d));
  const r = await file.server.api('POST', '/v1/send', { user: 'dm-target', body: { hi: 1 } });
  assert.deepEqual(r, { status: 200, body: { delivered: 1 } });
  await until(() => got.length === 1, 5000, 'direct');
  assert.deepEqual(got[0], { op: 'direct', from: 'server', body: { hi: 1 } });
});

test('errors that are not retryable reject: pub before join, a bad channel name, up without upstream', async () => {
  const a = client('errs');
  await a.connect();
  await assert.rejects(a.channel('chat:nojoin').publish({}), (e) => e.code === 'forbidden');
  await assert.rejects(a.channel('bad name!').join(), (e) => e.code === 'bad_request');
  const ch = a.channel('chat:up');
  await ch.join();
  const errors = [];
  ch.on('error', (e) => errors.push(e));
  ch.up({ hello: 1 });
  await until(() => errors.length === 1, 5000, 'the up error');
  assert.equal(errors[0].code, 'bad_request');
});

test('leave stops membership: no more msgs, queued publishes reject with left', async () => {
  const a = client('leaver');
  const b = client('stayer');
  const aCh = a.channel('chat:leave');
  const bCh = b.channel('chat:leave');
  const got = [];
  aCh.on('msg', (m) => got.push(m));
  await aCh.join();
  await bCh.join();
  await bCh.publish({ n: 1 });
  await until(() => got.length === 1, 5000, 'first msg');
  await aCh.leave();
  assert.equal(aCh.joined, false);
  await bCh.publish({ n: 2 });
  const ping = await a.ping();
  assert.ok(ping >= 0);
  assert.equal(got.length, 1);
  await assert.rejects(aCh.publish({}), (e) => e.code === 'forbidden');
});

test('ping measures a round trip', async () => {
  const a = client('pinger');
  await a.connect();
  const rtt = await a.ping();
  assert.ok(rtt >= 0 && rtt < 5000);
});
