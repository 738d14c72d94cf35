// `up` reaches the namespace's app server (PROTOCOL.md "Upstream
// forwarding"); one sent while the connection is down is held by the SDK and
// sent after the rejoin, from the new connection, and nothing is sent twice.
import assert from 'node:assert/strict';
import { scenario, demoTenant } from '../lib/world.mjs';

scenario('up: delivered, and one sent while disconnected is delivered after the rejoin', async (w) => {
  const app = await w.app();
  const server = await w.server({
    tenants: demoTenant({ more: `\n[tenants.demo.namespaces.game]\ndurable = false\nupstream = "${app.url}"\n` }),
  });
  const c = await w.client(server, 'up-user');
  const ch = 'game:up';
  await w.joinAll(ch, c);
  const first = c.all({ ev: 'open' })[0].conn_id;
  c.send({ cmd: 'up', ch, body: { n: 1 } });
  const up1 = await app.next((e) => e.type === 'up' && e.body?.n === 1, { what: 'up n=1' });
  assert.equal(up1.user, 'up-user');
  assert.equal(up1.ch, ch);

  c.proxy.refuse();
  const from = c.events.length;
  c.proxy.cut();
  await c.next({ ev: 'disconnect' }, { from });
  c.send({ cmd: 'up', ch, body: { n: 2 } });
  c.send({ cmd: 'up', ch, body: { n: 3 } });
  c.proxy.accept();
  const reopened = await c.next({ ev: 'open' }, { from, timeoutMs: 10000 });
  assert.notEqual(reopened.conn_id, first);
  const up2 = await app.next((e) => e.type === 'up' && e.body?.n === 2, { what: 'up n=2, held over the drop' });
  const up3 = await app.next((e) => e.type === 'up' && e.body?.n === 3, { what: 'up n=3, held over the drop' });
  const join2 = app.events.findIndex((e) => e.type === 'join' && e.conn === up2.conn);
  assert.ok(join2 >= 0 && join2 < app.events.indexOf(up2), 'the held up comes from the rejoined connection');
  assert.ok(app.events.indexOf(up2) < app.events.indexOf(up3), 'held ups are sent in order');
  const ups = app.events.filter((e) => e.type === 'up').map((e) => e.body.n);
  assert.deepEqual(ups, [1, 2, 3], 'each up once, in order');
});
