// The MessagePack codec on its own: PROTOCOL.md's mapping both ways, the
// `$bin` rule, and malformed server frames refused (thrown, which the client
// reports as `bad_frame`), never a crash or a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode } from '@msgpack/msgpack';
import { bin, binBytes } from '../src/codec.js';
import { msgpackCodec } from '../src/msgpack_codec.js';

const b = (...xs) => Uint8Array.from(xs);
const cat = (...parts) => Uint8Array.from(parts.flatMap((p) => [...p]));
const str = (s) => cat(b(0xa0 | s.length), new TextEncoder().encode(s));

test('bins inside bodies reach the application as {$bin}, and go back out as bin', () => {
  const frame = msgpackCodec.decode(cat(b(0x82), str('op'), str('msg'), str('body'),
    b(0x82), str('b'), b(0xc4, 3, 0, 1, 255), str('f'), b(0xca, 0x3f, 0, 0, 0)));
  assert.deepEqual(frame, { op: 'msg', body: { b: { $bin: 'AAH/' }, f: 0.5 } });
  const sent = { op: 'pub', ch: 'c', id: { $bin: 'AAE=' },
    body: { data: bin([0, 1]), loose: { $bin: 'AAE' }, odd: { $bin: 'AAF=' }, two: { $bin: 'AA==', x: 1 },
      n: -200, f: 1.5, list: [1, 'two', null, true], raw: b(7), when: new Date(0), gone: undefined } };
  const wire = msgpackCodec.encode(sent);
  // Only the canonical one in the body (and the Uint8Array) became bin; the id stays an object.
  assert.ok(Buffer.from(wire).includes(Buffer.from([0xc4, 2, 0, 1])));
  assert.ok(Buffer.from(wire).includes(Buffer.from([0xc4, 1, 7])));
  const back = msgpackCodec.decode(wire);
  assert.deepEqual(back, { op: 'pub', ch: 'c', id: { $bin: 'AAE=' },
    body: { data: { $bin: 'AAE=' }, loose: { $bin: 'AAE' }, odd: { $bin: 'AAF=' }, two: { $bin: 'AA==', x: 1 },
      n: -200, f: 1.5, list: [1, 'two', null, true], raw: { $bin: 'Bw==' }, when: '1970-01-01T00:00:00.000Z' } });
  assert.deepEqual(sent.body.data, { $bin: 'AAE=' }, 'the application\'s body is not changed');
  assert.deepEqual([...binBytes({ $bin: 'AAH/' })], [0, 1, 255]);
  assert.equal(binBytes({ $bin: 'AAF=' }), null);
  // A batch; integers of any width.
  assert.deepEqual(msgpackCodec.decode(cat(b(0x92, 0x81), str('seq'), b(0xce, 0, 0, 0, 7), b(0x81), str('op'), str('pong'))),
    [{ seq: 7 }, { op: 'pong' }]);
});

test('malformed server frames are refused', () => {
  const op = cat(b(0x81), str('op'), str('msg'));
  const bad = {
    'trailing bytes': cat(op, b(0xc0)),
    '0xc1': cat(b(0x81), str('op'), b(0xc1)),
    truncated: op.subarray(0, op.length - 1),
    ext: cat(b(0x81), str('body'), b(0xd4, 1, 0)),
    'timestamp ext': cat(b(0x81), str('body'), b(0xd6, 0xff, 0, 0, 0, 0)),
    'int key': b(0x81, 0x01, 0x02),
    NaN: cat(b(0x81), str('body'), b(0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0)),
    'bin outside a body': cat(b(0x81), str('id'), b(0xc4, 1, 0)),
    'top-level int': b(0x07),
    'batch of ints': b(0x92, 1, 2),
    'array count past the end': cat(b(0x81), str('body'), b(0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0)),
    'str length past the end': cat(b(0x81), str('op'), b(0xdb, 0xff, 0xff, 0xff, 0xff, 0x61)),
    'too deep': cat(b(0x81), str('body'), new Uint8Array(200000).fill(0x91), b(0xc0)),
    'text frame': '{"op":"msg"}',
  };
  for (const [why, frame] of Object.entries(bad)) {
    assert.throws(() => msgpackCodec.decode(frame), Error, why);
  }
  // 1,000 levels in a body are fine.
  const deep = cat(b(0x81), str('body'), new Uint8Array(1000).fill(0x91), b(0xc0));
  assert.ok(msgpackCodec.decode(deep).body);
  // What the library itself makes of a plain frame agrees.
  assert.deepEqual(msgpackCodec.decode(encode({ op: 'pong', rid: 3 })), { op: 'pong', rid: 3 });
});

test('random and mutated frames are decoded or refused with an Error, nothing else', () => {
  const valid = msgpackCodec.encode({ op: 'msg', seq: 70000, body: { b: bin([1, 2, 3]), f: 2.5, a: [1, -1, null, { k: 'v' }] } });
  let x = 88172645463325252n;
  const next = () => {
    x ^= (x << 13n) & 0xffffffffffffffffn;
    x ^= x >> 7n;
    x ^= (x << 17n) & 0xffffffffffffffffn;
    return Number(x & 0xffn);
  };
  const frames = [];
  for (let i = 0; i < valid.length; i++) {
    for (let b = 0; b < 256; b += 5) {
      const m = Uint8Array.from(valid);
      m[i] = b;
      frames.push(m);
    }
    frames.push(valid.subarray(0, i));
  }
  for (let k = 0; k < 20000; k++) frames.push(Uint8Array.from({ length: 1 + (k % 48) }, next));
  for (const f of frames) {
    try {
      msgpackCodec.decode(f);
    } catch (err) {
      assert.ok(err instanceof Error, `threw ${err}`);
    }
  }
});
