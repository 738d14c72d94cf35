// PROTOCOL.md "State deltas": a namespace with `state_delta = true` and a
// mixed channel — a JSON member, a MessagePack member, and MessagePack and
// JSON members that asked for deltas — must give every member's application
// the same full `state` bodies in the same order. Two senders stream 24
// bodies each (a field changing every time, fields appearing and going,
// nested values, binary values, one body that is not an object, one sent
// twice); each body is sent once the previous one reached everyone, so
// nothing is coalesced and every member is owed every body. A delta member
// leaves and re-joins midway (full bodies again, then deltas). The frames on
// the wire (the proxy's) show that the delta members really got `sd` frames
// and the others none. Also: every state carries the server's `tick` and `ts`.
//
// Needs the driver's `features` to list `state_delta` (DRIVER.md); skipped
// for an SDK that does not.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { FaultProxy } from '../lib/proxy.mjs';

const CH = 'world:deltas';
const TENANTS_MORE = 'state_delta = true\n';

// Body k of a sender: x changes every time, y every 4th, `fx` comes and
// goes, `o` (nested) changes every 5th, `b` is binary, k = 7 is an array
// (no delta can describe it: a full body, and the next one full too), and
// k = 12 repeats k = 11 (an `sd` with an empty body is still a delivery).
function bodyOf(tag, k) {
  if (k === 7) return [tag, k];
  const j = k === 12 ? 11 : k;
  const body = { x: j * 1.5, y: j >> 2, name: tag, o: { hp: Math.floor(j / 5), inv: [1, j % 2] }, b: { $bin: 'AAE=' } };
  if (j % 3 === 1) body.fx = 'spark';
  if (j % 6 === 5) body.emote = { w: 'wave', t: j };
  return body;
}
const N = 24;

function statesOf(d, from) {
  return d.all({ ev: 'state', ch: CH }).filter((e) => e.from === from);
}

scenario('a mixed channel with state deltas: every member gets the same full bodies in the same order', async (w) => {
  const server = await w.server({ tenants: demoTenant({ more: TENANTS_MORE }) });
  const members = await w.clients(server,
    { user: 'm-json', enc: 'json', recordDown: true },
    { user: 'm-msgpack', enc: 'msgpack', recordDown: true },
    { user: 'm-msgpack-d', enc: 'msgpack', deltas: true, recordDown: true },
    { user: 'm-json-d', enc: 'json', deltas: true, recordDown: true });
  if (!members[0].features.includes('state_delta')) {
    console.log(`# skipped: the ${members[0].sdk} driver does not list state_delta in its features`);
    return;
  }
  const [senderA, senderB] = await w.clients(server, { user: 's-a', enc: 'json' }, { user: 's-b', enc: 'msgpack' });
  const all = [...members, senderA, senderB];
  await w.joinAll(CH, ...all);
  const deltaMembers = members.filter((d) => d.user.endsWith('-d'));
  for (const d of members) {
    const open = d.all({ ev: 'open' })[0];
    if (deltaMembers.includes(d)) assert.equal(open.deltas, true, `${d.user}: the welcome granted state_delta`);
  }

  const expected = new Map([[senderA.user, []], [senderB.user, []]]);
  const rejoiner = members[2];
  for (let k = 0; k < N; k++) {
    if (k === 14) {
      // A delta member leaves and comes back: what follows starts with full bodies.
      rejoiner.send({ cmd: 'leave', ch: CH });
      const from = rejoiner.events.length;
      rejoiner.send({ cmd: 'join', ch: CH });
      await rejoiner.next({ ev: 'joined', ch: CH }, { from, what: 'the re-join' });
    }
    for (const s of [senderA, senderB]) {
      const body = bodyOf(s.user, k);
      expected.get(s.user).push(body);
      s.send({ cmd: 'state', ch: CH, key: 'pos', body });
    }
    for (const d of members) {
      for (const s of [senderA, senderB]) {
        await d.next((e) => e.ev === 'state' && e.ch === CH && e.from === s.user &&
          statesOf(d, s.user).length >= k + 1, { what: `${d.user}: state ${k} of ${s.user}` });
      }
    }
  }

  for (const d of members) {
    for (const s of [senderA, senderB]) {
      const got = statesOf(d, s.user);
      assert.deepEqual(got.map((e) => e.body), expected.get(s.user), `${d.user}: the bodies of ${s.user}`);
      for (const e of got) {
        assert.ok(Number.isInteger(e.tick) && Number.isInteger(e.ts), `${d.user}: a state with tick and ts: ${JSON.stringify(e)}`);
      }
      for (let k = 1; k < got.length; k++) {
        assert.ok(got[k].tick > got[k - 1].tick, `${d.user}: ${s.user}'s states in later ticks`);
        assert.ok(got[k].ts >= got[k - 1].ts, `${d.user}: ts does not go back`);
      }
    }
    // Nothing of the senders' own states came back to them, and no member got a gap or error.
    assert.deepEqual(d.all({ ev: 'error' }), [], `${d.user}: no error`);
  }
  for (const s of [senderA, senderB]) assert.deepEqual(statesOf(s, s.user), [], `${s.user} got its own state`);

  // The wire: `sd` frames only to the delta members. The server writes the
  // op first (JSON `{"op":"sd"`, MessagePack fixstr "op" then fixstr "sd").
  const sdFrames = (d) => d.proxy.countDown('"op":"sd"') + d.proxy.countDown('\xa2op\xa2sd');
  for (const d of members) {
    if (FaultProxy.encodingOf(d.proxy.heads[0]) === null) continue; // TLS: the bytes are opaque
    const n = sdFrames(d);
    if (deltaMembers.includes(d)) {
      // 2 senders x 24 bodies; full bodies: each stream's first, the array (k = 7)
      // and the one after it, and both streams after the re-join.
      assert.ok(n >= 2 * (N - 6), `${d.user} got only ${n} sd frames`);
    } else {
      assert.equal(n, 0, `${d.user} did not ask for deltas but got sd frames`);
    }
  }
}, { timeoutMs: 40000 });
