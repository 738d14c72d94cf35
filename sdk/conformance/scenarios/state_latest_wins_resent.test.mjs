// `state` is latest-wins per key: a member never sees an older body of a key
// after a newer one, and always ends with the latest. After the sender's
// connection is cut, its SDK rejoins and sends the latest body of each key
// again, so the others see it without the application doing anything.
import assert from 'node:assert/strict';
import { scenario } from '../lib/world.mjs';

scenario('state: latest wins, and the latest is resent after a rejoin', async (w) => {
  const server = await w.server(); // world: tick 20, presence
  const [a, b] = await w.clients(server, 'state-a', 'state-b');
  const ch = 'world:state';
  await w.joinAll(ch, a, b);
  const N = 30;
  for (let x = 1; x <= N; x++) a.send({ cmd: 'state', ch, key: 'pos', body: { x } });
  a.send({ cmd: 'state', ch, key: 'hp', body: { v: 7 } });
  const fromA = (e) => e.ev === 'state' && e.ch === ch && e.from === 'state-a';
  await b.next((e) => fromA(e) && e.key === 'pos' && e.body?.x === N, { what: `pos x=${N} from state-a` });
  await b.next((e) => fromA(e) && e.key === 'hp' && e.body?.v === 7, { what: 'hp from state-a' });
  const xs = b.all((e) => fromA(e) && e.key === 'pos').map((e) => e.body.x);
  for (let k = 1; k < xs.length; k++) {
    assert.ok(xs[k] > xs[k - 1], `state-b saw pos x=${xs[k]} after x=${xs[k - 1]}: an older state after a newer`);
  }
  assert.equal(a.count((e) => e.ev === 'state' && e.from === 'state-a'), 0, 'a state is not delivered to its sender');

  const seen = b.events.length;
  const aFrom = a.events.length;
  a.proxy.cut();
  await a.next({ ev: 'joined', ch }, { from: aFrom, what: 'state-a rejoined' });
  const pos = await b.next((e) => fromA(e) && e.key === 'pos', { from: seen, what: 'pos resent after the rejoin' });
  const hp = await b.next((e) => fromA(e) && e.key === 'hp', { from: seen, what: 'hp resent after the rejoin' });
  assert.equal(pos.body.x, N, 'the resent pos is the latest');
  assert.equal(hp.body.v, 7, 'the resent hp is the latest');
});
