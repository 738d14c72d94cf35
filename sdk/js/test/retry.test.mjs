// Retries of retryable errors against the real server: over a connection's
// publish rate (publish_per_conn_sec) the server answers rate_limited with
// retry_ms; the SDK waits at least that long and resends with the same id.
// That everything is then acknowledged once, in call order, and delivered
// with no gap is sdk/conformance's rate_limited_retried, which runs this SDK.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { backoffDelay, withJitter } from '../src/index.js';
import { serverForFile, demoTenant, until } from './support/server.mjs';

const { client } = serverForFile({ tenants: demoTenant({ extra: 'publish_per_conn_sec = 5' }) });

test('a retry waits at least the retry_ms the server asked for', async () => {
  const pub = client('patient');
  const errors = [];
  const sends = [];
  pub.on('frame', (f) => {
    if (f.op === 'error') errors.push({ f, at: Date.now() });
  });
  const ch = pub.channel('chat:patient');
  await ch.join();
  const origSend = WebSocket.prototype.send;
  // Observe what the SDK writes (its publish frames) without changing it.
  WebSocket.prototype.send = function send(data) {
    const f = JSON.parse(data);
    if (f.op === 'pub') sends.push({ f, at: Date.now() });
    return origSend.call(this, data);
  };
  try {
    await Promise.all(Array.from({ length: 8 }, (_, i) => ch.publish({ i })));
  } finally {
    WebSocket.prototype.send = origSend;
  }
  assert.ok(errors.length > 0);
  for (const e of errors) {
    const rejected = sends.find((s) => s.f.rid === e.f.rid);
    const resend = sends.find((s) => s.at >= e.at && s.f.id === rejected.f.id && s !== rejected);
    assert.ok(resend, `publish ${rejected.f.id} was resent`);
    assert.ok(resend.at - e.at >= e.f.retry_ms - 5, `resent ${resend.at - e.at} ms after retry_ms ${e.f.retry_ms}`);
  }
});

test('state over the rate is resent, latest value wins', async () => {
  const a = client('streamer');
  const b = client('viewer');
  const bCh = b.channel('world:limited');
  const seen = [];
  bCh.on('state', (s) => seen.push(s.body.x));
  await bCh.join();
  const aCh = a.channel('world:limited');
  await aCh.join();
  let retried = 0;
  a.on('retry', (r) => r.op === 'state' && retried++);
  for (let x = 1; x <= 12; x++) {
    aCh.setState('pos', { x });
    await new Promise((r) => setTimeout(r, 5));
  }
  await until(() => seen.at(-1) === 12, 5000, 'the latest state');
  assert.ok(retried > 0, 'some states were rate-limited and retried');
});

test('backoff: equal jitter between half and all of the capped exponential', () => {
  const o = { minMs: 100, maxMs: 1000, factor: 2 };
  assert.equal(backoffDelay(0, o, () => 0), 50);
  assert.equal(backoffDelay(0, o, () => 1), 100);
  assert.equal(backoffDelay(3, o, () => 1), 800);
  assert.equal(backoffDelay(10, o, () => 0), 500);
  assert.equal(backoffDelay(10, o, () => 1), 1000);
  assert.equal(withJitter(500, 0.5, () => 0), 500);
  assert.equal(withJitter(500, 0.5, () => 1), 750);
});
