// PROTOCOL.md "Time for games", with independent clients (wire_clients.mjs): a
// `state` carries the server's tick number and time, a `pong` the server's
// time, in JSON over WebSocket, MessagePack over WebSocket and MessagePack over
// TCP. The server runs on this machine, so its wall clock is ours: every `ts`
// must fall between the local times around it.
//
//   node game_time_test.mjs HTTP_PORT TCP_PORT TOKEN_A TOKEN_B TOKEN_C
// Exits 0 when everything holds, non-zero naming the first failure.
import assert from 'node:assert/strict';
import { makeClients } from './wire_clients.mjs';

const [httpPort, tcpPort, tokenA, tokenB, tokenC] = process.argv.slice(2);
if (!tokenC) {
  console.error('usage: node game_time_test.mjs HTTP_PORT TCP_PORT TOKEN_A TOKEN_B TOKEN_C');
  process.exit(2);
}
setTimeout(() => fail(new Error('gave up after 30000 ms')), 30000).unref();

let step = 'connect';
function fail(err) {
  console.error(`game time test FAILED at step "${step}": ${err.stack ?? err.message}`);
  process.exit(1);
}
const { WsClient, TcpClient } = makeClients({ httpPort, tcpPort, fail: (e) => fail(e) });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const a = new WsClient('A (json ws)', 'json');
  const b = new WsClient('B (msgpack ws)', 'msgpack');
  const c = new TcpClient('C (msgpack tcp)');
  await Promise.all([a.open(), b.open(), c.open()]);
  a.send({ op: 'hello', v: 1, token: tokenA, rid: 1 });
  b.send({ op: 'hello', v: 1, token: tokenB, rid: 1 });
  c.send({ op: 'hello', v: 1, token: tokenC, rid: 1, enc: 'msgpack' });
  await Promise.all([a, b, c].map((cl) => cl.expectOp('welcome', 1)));

  step = 'pong carries the server time';
  for (const cl of [a, b, c]) {
    const t0 = Date.now();
    cl.send({ op: 'ping', rid: 2 });
    const pong = await cl.expectOp('pong', 2);
    const t1 = Date.now();
    assert.ok(Number.isInteger(pong.ts), `${cl.name}: pong.ts is an integer: ${JSON.stringify(pong)}`);
    assert.ok(pong.ts >= t0 && pong.ts <= t1, `${cl.name}: pong.ts ${pong.ts} within [${t0}, ${t1}]`);
  }

  step = 'join';
  const ch = `world:time-${process.pid}-${Date.now()}`;
  for (const cl of [a, b, c]) cl.send({ op: 'join', ch, rid: 3 });
  await Promise.all([a, b, c].map((cl) => cl.expectOp('joined', 3)));

  step = 'states carry tick and ts';
  const t0 = Date.now();
  const got = { [b.name]: [], [c.name]: [] };
  for (let i = 0; i < 4; ++i) {
    a.send({ op: 'state', ch, key: 'pos', body: { x: i } });
    for (const cl of [b, c]) got[cl.name].push(await cl.expectOp('state'));
    await sleep(45);  // past the 20 ms tick: each state in a tick of its own
  }
  // A state from a MessagePack member reaches the JSON one stamped too.
  b.send({ op: 'state', ch, key: 'pos', body: { x: 'from b' } });
  const onA = await a.expectOp('state');
  const t1 = Date.now();
  for (const s of [...got[b.name], ...got[c.name], onA]) {
    assert.ok(Number.isInteger(s.tick) && s.tick > 0, `tick is a positive integer: ${JSON.stringify(s)}`);
    assert.ok(Number.isInteger(s.ts) && s.ts >= t0 && s.ts <= t1, `ts ${s.ts} within [${t0}, ${t1}]`);
  }
  assert.deepEqual(onA.body, { x: 'from b' });
  for (const [name, states] of Object.entries(got)) {
    assert.deepEqual(states.map((s) => s.body.x), [0, 1, 2, 3], `${name}: the bodies in order`);
    for (let i = 1; i < states.length; ++i) {
      // 45 ms apart with a 20 ms tick: at least 2 ticks later, and a later tick
      // has a later time (a tick's ts is when it fired: on a loaded machine a
      // timer fires late, so only the order and a loose bound hold).
      const dt = states[i].tick - states[i - 1].tick;
      assert.ok(dt >= 2, `${name}: ticks ${states[i - 1].tick} then ${states[i].tick}`);
      const dts = states[i].ts - states[i - 1].ts;
      assert.ok(dts > 0 && dts <= dt * 20 + 500, `${name}: ${dt} ticks took ${dts} ms`);
    }
  }
  // One server: the same state has the same tick on every member (or the next,
  // if the two members' loops straddled a tick).
  for (let i = 0; i < 4; ++i) {
    assert.ok(Math.abs(got[b.name][i].tick - got[c.name][i].tick) <= 1, 'one tick clock per server');
  }

  console.log('game time test passed');
  process.exit(0);
}

main().catch(fail);
