// A channel whose members speak different encodings (PROTOCOL.md "Binary
// encoding: MessagePack"), with independent clients: the `ws` package for
// WebSocket, node:net for TCP, @msgpack/msgpack for MessagePack. Members: JSON
// over WebSocket, MessagePack over WebSocket (subprotocol parley.v1.msgpack),
// MessagePack over TCP (hello with "enc":"msgpack"). Each publishes, one with a
// bin body, one with a {"$bin"} body; every member must receive the same bodies
// in the same seq order (bin for MessagePack members, {"$bin": base64} for
// JSON ones), and history in MessagePack must carry them too. Also checked: the
// wrong frame type on either WebSocket is bad_request, and an unknown `enc` on
// TCP is bad_request with the connection staying in JSON.
//
//   node msgpack_test.mjs HTTP_PORT TCP_PORT TOKEN_A TOKEN_B TOKEN_C
// Exits 0 when everything matches, non-zero naming the first mismatch.
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { asJson, makeClients } from './wire_clients.mjs';

const [httpPort, tcpPort, tokenA, tokenB, tokenC] = process.argv.slice(2);
if (!tokenC) {
  console.error('usage: node msgpack_test.mjs HTTP_PORT TCP_PORT TOKEN_A TOKEN_B TOKEN_C');
  process.exit(2);
}
setTimeout(() => fail(new Error('gave up after 30000 ms')), 30000).unref();

let step = 'connect';
function fail(err) {
  console.error(`msgpack test FAILED at step "${step}": ${err.stack ?? err.message}`);
  process.exit(1);
}

const { WsClient, TcpClient } = makeClients({ httpPort, tcpPort, fail: (e) => fail(e) });

async function main() {
  const a = new WsClient('A (json ws)', 'json');
  const b = new WsClient('B (msgpack ws)', 'msgpack');
  const c = new TcpClient('C (msgpack tcp)');
  await Promise.all([a.open(), b.open(), c.open()]);

  step = 'tcp hello with an unknown enc';
  c.send({ op: 'hello', v: 1, token: tokenC, rid: 1, enc: 'cbor' });
  const refused = await c.expectOp('error', 1);
  assert.equal(refused.code, 'bad_request', 'unknown enc is bad_request');
  assert.equal(c.encoding, 'json', 'the connection stays in JSON');

  step = 'hello';
  a.send({ op: 'hello', v: 1, token: tokenA, rid: 1 });
  b.send({ op: 'hello', v: 1, token: tokenB, rid: 1 });
  c.send({ op: 'hello', v: 1, token: tokenC, rid: 2, enc: 'msgpack' });
  const [wa, wb, wc] = await Promise.all([a.expectOp('welcome'), b.expectOp('welcome'), c.expectOp('welcome')]);
  assert.equal(wa.enc, undefined, 'a JSON welcome has no enc');
  assert.equal(wb.enc, 'msgpack', 'the MessagePack WebSocket welcome says enc');
  assert.equal(wc.enc, 'msgpack', 'the TCP welcome carries "enc":"msgpack"');
  assert.equal(c.encoding, 'msgpack');

  step = 'join';
  const ch = `chat:mp-${process.pid}-${Date.now()}`;
  for (const [cl, rid] of [[a, 2], [b, 2], [c, 3]]) cl.send({ op: 'join', ch, rid });
  await Promise.all([a.expectOp('joined', 2), b.expectOp('joined', 2), c.expectOp('joined', 3)]);

  step = 'publish';
  const bodies = [
    [a, { n: 1, text: 'from json', f: 2.25, list: [1, -2, null, true] }],
    [b, { n: 2, blob: new Uint8Array([0, 1, 2, 255]), f: 0.5 }],
    [c, { n: 3, text: 'from tcp', deep: { x: [{ y: 'z' }] } }],
    [a, { n: 4, blob: { $bin: 'AAEC' } }],
    [b, 'a string body'],
    [c, { n: 6, big: 9007199254740991, neg: -12345678 }],
  ];
  let rid = 10;
  for (const [cl, body] of bodies) {
    cl.send({ op: 'pub', ch, id: `m-${rid}`, body, rid });
    await cl.expectOp('ack', rid);
    ++rid;
  }

  step = 'delivery';
  const want = bodies.map(([, body]) => asJson(body));
  const seen = {};
  for (const cl of [a, b, c]) {
    const got = [];
    for (let i = 0; i < bodies.length; ++i) got.push(await cl.expectOp('msg'));
    assert.deepEqual(got.map((m) => m.seq), [1, 2, 3, 4, 5, 6], `${cl.name}: seqs in order`);
    if (cl.encoding === 'msgpack') {
      // bin arrives as bin, whichever encoding published it.
      assert.ok(got[1].body.blob instanceof Uint8Array, `${cl.name}: B's bin body arrives as bin`);
      assert.ok(got[3].body.blob instanceof Uint8Array, `${cl.name}: A's {"$bin"} arrives as bin`);
    } else {
      assert.deepEqual(got[1].body.blob, { $bin: 'AAEC/w==' }, `${cl.name}: bin arrives as {"$bin"}`);
    }
    seen[cl.name] = got.map((m) => asJson(m.body));
    assert.deepEqual(seen[cl.name], want, `${cl.name}: the bodies as published`);
  }

  step = 'history in MessagePack';
  c.send({ op: 'history', ch, after: 0, rid: 30 });
  const hist = await c.expectOp('history', 30);
  assert.deepEqual(hist.msgs.map((m) => asJson(m.body)), want, 'history bodies');
  assert.ok(hist.msgs[3].body.blob instanceof Uint8Array, 'history keeps the $bin rule');

  step = 'wrong frame types';
  b.sendRaw(JSON.stringify({ op: 'ping', rid: 40 }), false);
  const onB = await b.expectOp('error');
  assert.equal(onB.code, 'bad_request', 'a text frame on a MessagePack connection');
  a.sendRaw(Buffer.from(encode({ op: 'ping', rid: 41 })), true);
  const onA = await a.expectOp('error');
  assert.equal(onA.code, 'bad_request', 'a binary frame on a JSON connection');
  b.send({ op: 'ping', rid: 42 });
  await b.expectOp('pong', 42);  // still open and in MessagePack

  step = 'hostile MessagePack';
  b.sendRaw(Buffer.from([0x82, 0xa2, 0x6f, 0x70, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa1, 0x78, 0xd4, 0x01, 0x00]), true);
  const ext = await b.expectOp('error');
  assert.equal(ext.code, 'bad_request', 'an ext value');
  c.send({ op: 'ping', rid: 43 });
  await c.expectOp('pong', 43);

  console.log('msgpack test passed');
  process.exit(0);
}

main().catch(fail);
