// Edits and deletes (PROTOCOL.md "Moderation: delete and edit") through the
// SDK against the real server, in both encodings: Channel.edit/delete, the
// `edit` / `delete` entries in the channel's seq stream (live and on a
// resume), and MessageLog applying them to what the application holds, from
// live entries and from history alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageLog, ParleyError } from '../src/index.js';
import { serverForFile, demoTenant, until } from './support/server.mjs';

const file = serverForFile({ tenants: demoTenant({ extra: 'publish_per_conn_sec = 0\n' }) });
const { client } = file;

// What a log fed by either path must hold after m1 edited and m2 deleted.
function expectCurrent(log) {
  const [m1, m2] = log.messages();
  assert.deepEqual(m1.body, { t: 'fixed' });
  assert.ok(Number.isInteger(m1.edited), JSON.stringify(m1));
  assert.equal(m2.deleted, true);
  assert.equal(m2.body, undefined);
  assert.equal(log.size, 2);
}

for (const encoding of ['json', 'msgpack']) {
  test(`${encoding}: edit and delete reach members live and history, and MessageLog applies both`, async () => {
    const ch = `chat:mod-${encoding}`;
    const alice = client('alice', { encoding });
    const bob = client('bob', { encoding });
    const aCh = alice.channel(ch);
    const bCh = bob.channel(ch);
    const live = new MessageLog();
    const kinds = [];
    for (const kind of ['msg', 'edit', 'delete']) {
      bCh.on(kind, (e) => {
        kinds.push(kind);
        live.apply(e);
      });
    }
    await bCh.join();
    await aCh.join();
    const m1 = await aCh.publish({ t: 'tpyo' });
    const m2 = await aCh.publish({ t: 'oops' });
    const edited = await aCh.edit(m1.seq, { t: 'fixed' });
    assert.deepEqual(edited, { seq: m2.seq + 1, target: m1.seq });
    const deleted = await aCh.delete(m2.seq);
    assert.deepEqual(deleted, { seq: m2.seq + 2, target: m2.seq });
    await until(() => kinds.length === 4, 5000, 'four entries');
    assert.deepEqual(kinds, ['msg', 'msg', 'edit', 'delete']);
    assert.equal(bCh.lastSeq, deleted.seq); // the entries took their seqs: no gap, no repair
    expectCurrent(live);

    // A late reader: history holds the current versions and the entries.
    const carol = client('carol', { encoding });
    await carol.connect();
    const page = await carol.channel(ch).history({ after: 0 });
    assert.deepEqual(page.map((e) => e.op), ['msg', 'msg', 'edit', 'delete']);
    const fromHistory = new MessageLog();
    fromHistory.applyAll(page);
    expectCurrent(fromHistory);

    // Not the author: refused with the server's code, no seq taken.
    await assert.rejects(bCh.edit(m1.seq, { t: 'mine now' }),
      (e) => e instanceof ParleyError && e.code === 'forbidden');
    await assert.rejects(aCh.delete(9999), (e) => e instanceof ParleyError && e.code === 'not_found');
    const next = await aCh.publish({ t: 'after' });
    assert.equal(next.seq, deleted.seq + 1);
  });
}

test('a resume replays edits and deletes after `since` to the channel in seq order', async () => {
  const ch = 'chat:mod-resume';
  const alice = client('alice');
  const aCh = alice.channel(ch);
  await aCh.join();
  const m1 = await aCh.publish({ t: 1 });
  const dave = client('dave');
  const dCh = dave.channel(ch);
  const log = new MessageLog();
  const seen = [];
  for (const kind of ['msg', 'edit', 'delete']) dCh.on(kind, (e) => { seen.push(e.op); log.apply(e); });
  await dCh.join({ since: 0 });
  await until(() => seen.length === 1, 5000, 'm1');
  await dCh.leave();
  await aCh.edit(m1.seq, { t: 2 });
  await aCh.delete(m1.seq);
  await dCh.join({ since: m1.seq });
  await until(() => seen.length === 3, 5000, 'the replayed entries');
  assert.deepEqual(seen, ['msg', 'edit', 'delete']);
  assert.equal(log.get(m1.seq).deleted, true);
});

test('MessageLog: an entry applied twice, out of order or after a delete changes nothing more', () => {
  const log = new MessageLog();
  const msg = { op: 'msg', ch: 'c', seq: 1, from: 'u', id: 'a', ts: 10, body: 1 };
  assert.equal(log.apply({ op: 'edit', ch: 'c', seq: 2, target: 1, from: 'u', ts: 20, body: 2 }), null); // not held
  log.apply(msg);
  log.apply({ op: 'edit', ch: 'c', seq: 2, target: 1, from: 'u', ts: 20, body: 2 });
  log.apply(msg); // the original read again (a backfill overlapping live)
  assert.equal(log.get(1).body, 2);
  log.apply({ op: 'delete', ch: 'c', seq: 3, target: 1, from: 'm', ts: 30 });
  log.apply({ op: 'edit', ch: 'c', seq: 4, target: 1, from: 'u', ts: 40, body: 3 });
  log.apply({ ...msg, edited: 20, body: 2 });
  assert.equal(log.get(1).deleted, true);
  assert.equal(log.get(1).body, undefined);
  assert.equal(log.size, 1);
});
