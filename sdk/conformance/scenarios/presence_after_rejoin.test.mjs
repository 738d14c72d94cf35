// Presence across a cut (PROTOCOL.md "Server frames": presence is per user,
// `leave` at once when its last connection disconnects, `join` when its first
// joins; never sent to the user it is about). The proxy cuts B and refuses it
// while C leaves; A sees B leave at once and join again after B's rejoin,
// once each; B's rejoin lists every member once and B is told, in one event,
// only what changed while it was away (C left), never about itself; the
// server's own list has B once.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';

const ch = 'chat:presence';

function presence(d, from = 0) {
  return d.events.slice(from).filter((e) => e.ev === 'presence' && e.ch === ch);
}

// The member set `d` ends with after the events from `from` on, starting at
// `start`, checking no one joins twice or leaves while absent.
function replay(d, start, from) {
  const set = new Set(start);
  for (const p of presence(d, from)) {
    for (const u of p.join ?? []) {
      assert.ok(!set.has(u), `${d.name}: ${u} joined while present: ${JSON.stringify(presence(d, from))}`);
      set.add(u);
    }
    for (const u of p.leave ?? []) {
      assert.ok(set.has(u), `${d.name}: ${u} left while absent: ${JSON.stringify(presence(d, from))}`);
      set.delete(u);
    }
  }
  return set;
}

scenario('presence after a cut and rejoin: the member once, leave and join seen by others', async (w) => {
  const server = await w.server();
  const [a, b, c] = await w.clients(server, 'pres-a', 'pres-b', 'pres-c');
  await w.joinAll(ch, a);
  await w.joinAll(ch, b);
  await w.joinAll(ch, c);
  await a.next((e) => e.ev === 'presence' && e.ch === ch && (e.join ?? []).includes('pres-c'), { what: 'A sees C join' });
  await b.next((e) => e.ev === 'presence' && e.ch === ch && (e.join ?? []).includes('pres-c'), { what: 'B sees C join' });
  const joinedB = b.all({ ev: 'joined', ch })[0];
  assert.deepEqual([...joinedB.members].sort(), ['pres-a', 'pres-b'], 'B\'s first joined lists A and B');

  const fromA = a.events.length;
  const fromB = b.events.length;
  const opens = b.count({ ev: 'open' });
  b.proxy.refuse();
  b.proxy.cut();
  await a.next((e) => e.ev === 'presence' && (e.leave ?? []).includes('pres-b'),
    { from: fromA, timeoutMs: 3000, what: 'A sees B leave at once' });
  c.send({ cmd: 'leave', ch });
  await a.next((e) => e.ev === 'presence' && (e.leave ?? []).includes('pres-c'), { from: fromA, what: 'A sees C leave' });
  b.proxy.accept();
  await b.nth({ ev: 'open' }, opens + 1, { what: 'B reopened' });
  const rejoined = await b.next({ ev: 'joined', ch }, { from: fromB, what: 'B rejoined' });
  await a.next((e) => e.ev === 'presence' && (e.join ?? []).includes('pres-b'),
    { from: fromA, what: 'A sees B join again' });

  assert.deepEqual([...rejoined.members].sort(), ['pres-a', 'pres-b'], 'B\'s rejoin lists each member once');
  // A: B left once and joined once, C left; A ends with B once.
  const seenA = presence(a, fromA);
  assert.equal(seenA.filter((e) => (e.leave ?? []).includes('pres-b')).length, 1, 'A: one leave of B');
  assert.equal(seenA.filter((e) => (e.join ?? []).includes('pres-b')).length, 1, 'A: one join of B');
  assert.deepEqual([...replay(a, ['pres-b', 'pres-c'], fromA)].sort(), ['pres-b'], 'A ends with B present once');
  // B: told about C's leave (what changed while away) once, never about itself.
  const seenB = presence(b, fromB);
  for (const p of b.all({ ev: 'presence' })) {
    assert.ok(![...(p.join ?? []), ...(p.leave ?? [])].includes('pres-b'), `B was told about itself: ${JSON.stringify(p)}`);
  }
  assert.deepEqual(seenB.map((p) => [p.join ?? [], p.leave ?? []]), [[[], ['pres-c']]],
    'B: one presence event with what changed while it was away');
  const api = await server.api('GET', `/v1/presence?ch=${encodeURIComponent(ch)}`);
  assert.equal(api.status, 200);
  assert.deepEqual([...api.body.members].sort(), ['pres-a', 'pres-b'], 'the server lists B once');
});
