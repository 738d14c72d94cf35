// A subscriber away for longer than its channel's history reaches: on the
// rejoin `recovered` is false, what history no longer has is one `gap`
// {from, to} (exactly the seqs the server no longer holds), and everything
// from the oldest kept seq on is delivered once, in order. A subscriber away
// as long on a channel whose history holds everything sees no gap.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';
import { range, awaitSeq, assertStream } from '../lib/checks.mjs';

const tenants = demoTenant({ more: '\n[tenants.demo.namespaces.short]\ndurable = false\nhistory = 5\n' });

scenario('missed more than history holds: one gap, then the rest in order', async (w) => {
  const server = await w.server({ tenants });
  const [pub, sub] = await w.clients(server, 'pub-gap', 'sub-gap');
  const short = 'short:gap';
  const long = 'chat:gap';
  await w.joinAll(short, pub, sub);
  await w.joinAll(long, pub, sub);
  pub.send({ cmd: 'publish', ch: short, n: 3 });
  pub.send({ cmd: 'publish', ch: long, n: 3 });
  await awaitSeq(sub, short, 3);
  await awaitSeq(sub, long, 3);

  sub.proxy.refuse();
  const from = sub.events.length;
  sub.proxy.cut();
  await sub.next({ ev: 'disconnect' }, { from });
  // 100 more while it is away: far more than `short`'s history of 5.
  pub.send({ cmd: 'publish', ch: short, n: 100, start: 3 });
  pub.send({ cmd: 'publish', ch: long, n: 100, start: 3 });
  await pub.nth((e) => e.ev === 'published', 206, { timeoutMs: 20000, what: 'all 206 acks' });
  const kept = await server.api('GET', `/v1/history?ch=${short}&after=0&limit=1000`);
  const oldest = kept.body.msgs[0].seq;
  assert.ok(oldest > 4 && oldest <= 99, `the server holds ${short} from seq ${oldest}`);
  sub.proxy.accept();

  await awaitSeq(sub, short, 103);
  const rejoin = sub.all({ ev: 'joined', ch: short }).at(-1);
  assert.equal(rejoin.recovered, false, 'the rejoin says history did not hold everything');
  assert.deepEqual(sub.all({ ev: 'gap', ch: short }).map(({ from: f, to }) => ({ from: f, to })),
    [{ from: 4, to: oldest - 1 }], 'one gap: exactly the seqs the server no longer holds');
  assert.deepEqual(sub.all({ ev: 'msg', ch: short }).map((m) => m.seq), [1, 2, 3, ...range(oldest, 103)]);
  const gapAt = sub.events.findIndex((e) => e.ev === 'gap');
  const firstNew = sub.events.findIndex((e) => e.ev === 'msg' && e.ch === short && e.seq === oldest);
  assert.ok(gapAt < firstNew, 'the gap is reported before the messages after it');

  await awaitSeq(sub, long, 103);
  assert.equal(sub.all({ ev: 'joined', ch: long }).at(-1).recovered, true, `${long}'s history held everything`);
  assertStream(sub, long, range(1, 103));
});
