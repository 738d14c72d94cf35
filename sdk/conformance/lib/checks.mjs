// The properties every scenario checks of what the application saw, each in
// one place so every SDK is held to the same reading of PROTOCOL.md.
import assert from 'node:assert/strict';

export function range(from, to) {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}

/** The `msg` events of `ch` a driver delivered, in delivery order. */
export function delivered(d, ch) {
  return d.all({ ev: 'msg', ch });
}

/**
 * The channel's stream as the application saw it is exactly `seqs`: in order,
 * nothing missing between them, nothing twice, and (as nothing was lost) no
 * `gap` or `reset` reported.
 */
export function assertStream(d, ch, seqs) {
  assert.deepEqual(d.all((e) => (e.ev === 'gap' || e.ev === 'reset') && e.ch === ch), [],
    `${d.name}: ${ch} reported a gap or reset where nothing was lost`);
  const got = delivered(d, ch).map((m) => m.seq);
  const dups = got.filter((s, k) => got.indexOf(s) !== k);
  assert.deepEqual(dups, [], `${d.name}: ${ch} delivered seqs twice`);
  for (let k = 1; k < got.length; k++) {
    assert.ok(got[k] > got[k - 1], `${d.name}: ${ch} delivered seq ${got[k]} after ${got[k - 1]}`);
  }
  assert.deepEqual(got, seqs, `${d.name}: ${ch} stream`);
}

/** Waits until `d` delivered seq `seq` on `ch`. */
export function awaitSeq(d, ch, seq, timeoutMs = 15000) {
  return d.next((e) => e.ev === 'msg' && e.ch === ch && e.seq === seq,
    { timeoutMs, what: `msg ${ch} seq ${seq}` });
}

/** Waits until the `n` publishes i = start…start+n−1 on `ch` resolved. */
export async function awaitPublished(d, ch, n, start = 0, timeoutMs = 20000) {
  const mine = (e) => (e.ev === 'published' || e.ev === 'publish_failed') && e.ch === ch &&
    e.i >= start && e.i < start + n;
  await d.nth(mine, n, { timeoutMs, what: `resolutions of publishes ${start}..${start + n - 1} on ${ch}` });
}

/**
 * Every publish i = start…start+n−1 on `ch` resolved exactly once, with an
 * ack (none failed); one seq per client id and one id per seq; with
 * `inOrder`, seqs rise in call order. No publish of `ch` failed but those
 * whose i is in `failing` (made to fail on purpose). Returns the acks indexed by i − start.
 */
export function assertPublished(d, ch, n, { start = 0, inOrder = true, failing = [] } = {}) {
  const failed = d.all((e) => e.ev === 'publish_failed' && e.ch === ch && !failing.includes(e.i));
  assert.deepEqual(failed, [], `${d.name}: publishes on ${ch} failed`);
  const acks = d.all({ ev: 'published', ch }).filter((e) => e.i >= start && e.i < start + n);
  const byI = new Map();
  for (const a of acks) {
    assert.ok(!byI.has(a.i), `${d.name}: publish i=${a.i} on ${ch} resolved twice`);
    assert.ok(Number.isInteger(a.seq) && a.seq > 0, `${d.name}: publish i=${a.i} resolved without a seq`);
    assert.ok(typeof a.id === 'string' && a.id.length > 0, `${d.name}: publish i=${a.i} resolved without its id`);
    byI.set(a.i, a);
  }
  assert.equal(byI.size, n, `${d.name}: ${byI.size} of ${n} publishes on ${ch} resolved`);
  const out = range(start, start + n - 1).map((i) => byI.get(i));
  const seqOfId = new Map();
  const idOfSeq = new Map();
  for (const a of out) {
    assert.ok(!seqOfId.has(a.id), `${d.name}: client id ${a.id} resolved twice`);
    assert.ok(!idOfSeq.has(a.seq), `${d.name}: seq ${a.seq} acked for ids ${idOfSeq.get(a.seq)} and ${a.id}`);
    seqOfId.set(a.id, a.seq);
    idOfSeq.set(a.seq, a.id);
  }
  if (inOrder) {
    for (let k = 1; k < out.length; k++) {
      assert.ok(out[k].seq > out[k - 1].seq,
        `${d.name}: publish i=${out[k].i} got seq ${out[k].seq}, not above i=${out[k - 1].i}'s ${out[k - 1].seq}`);
    }
  }
  return out;
}

/** Each ack's message reached `sub` under its seq with its id and body. */
export function assertAcksDelivered(sub, ch, acks) {
  const bySeq = new Map(delivered(sub, ch).map((m) => [m.seq, m]));
  for (const a of acks) {
    const m = bySeq.get(a.seq);
    assert.ok(m, `${sub.name}: acked seq ${a.seq} (i=${a.i}) never delivered on ${ch}`);
    assert.equal(m.id, a.id, `${sub.name}: seq ${a.seq} has id ${m.id}, acked as ${a.id}`);
    assert.equal(m.body?.i, a.i, `${sub.name}: seq ${a.seq} has body.i ${m.body?.i}, acked for i=${a.i}`);
  }
}

/**
 * The whole property for one publisher on a fresh channel: its `n` publishes
 * resolved once each as seqs 1…n in call order, and every one of `members`
 * delivered exactly 1…n with the acked ids and bodies. Returns the acks.
 */
export async function assertDeliveredOnce(pub, ch, n, members, timeoutMs = 15000) {
  const acks = assertPublished(pub, ch, n);
  assert.deepEqual(acks.map((a) => a.seq), range(1, n), `the acks of ${ch} are seqs 1..${n}`);
  for (const d of members) {
    await awaitSeq(d, ch, n, timeoutMs);
    assertStream(d, ch, range(1, n));
    assertAcksDelivered(d, ch, acks);
  }
  return acks;
}

/** The server stored `n` messages on `ch`, seqs 1…n, each client id once. */
export async function assertStoredOnce(server, ch, n) {
  const stored = await server.stored(ch);
  assert.deepEqual(stored.map((m) => m.seq), range(1, n), `the server's log of ${ch}`);
  const ids = new Set(stored.map((m) => `${m.from}/${m.id}`));
  assert.equal(ids.size, n, `the server stored a (user, id) of ${ch} twice`);
}

/**
 * The reconnect backoff every SDK implements (README "Reconnect"): attempt k
 * (0-based, back to 0 after a welcome) waits a delay drawn from [cap/2, cap],
 * cap = min(maxMs, minMs·factor^k).
 */
export function backoffBounds(k, { minMs, maxMs, factor }) {
  const cap = Math.min(maxMs, minMs * factor ** k);
  return [cap / 2, cap];
}
