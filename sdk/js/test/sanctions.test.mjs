// PROTOCOL.md "Moderation: mute, kick, ban" through the SDK against the real
// server: a kick's reason reaches the application as the channel's and the
// client's `kicked` event, the channel is left for good (no rejoin), and what
// waited on it rejects with code `kicked`; a mute's pub rejects forbidden.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverForFile, until } from './support/server.mjs';

const file = serverForFile();
const { client } = file;

test('a kick reaches the application with its reason, and the channel stays left', async () => {
  const a = client('kick-me');
  const ch = a.channel('chat:kick');
  await ch.join();
  const onChannel = [];
  const onClient = [];
  ch.on('kicked', (k) => onChannel.push(k));
  a.on('kicked', (k) => onClient.push(k));
  const r = await file.server.api('POST', '/v1/kick', { user: 'kick-me', ch: 'chat:kick', reason: 'flooding' });
  assert.deepEqual(r, { status: 200, body: { kicked: 1 } });
  await until(() => onChannel.length === 1, 5000, 'the kicked event');
  assert.deepEqual(onChannel[0], { ch: 'chat:kick', reason: 'flooding' });
  assert.deepEqual(onClient, [{ ch: 'chat:kick', reason: 'flooding' }]);
  assert.equal(ch.joined, false);
  // No rejoin on its own: the server lists nobody in the channel.
  const members = await file.server.api('GET', '/v1/presence?ch=chat:kick');
  assert.deepEqual(members.body.members, []);
  await assert.rejects(ch.publish({ after: 'kick' }), (e) => e.code === 'forbidden');
});

test('a muted user\'s publish rejects forbidden "muted" and is not retried', async () => {
  const a = client('mute-me');
  const ch = a.channel('chat:mute');
  await ch.join();
  const r = await file.server.api('POST', '/v1/mute', { user: 'mute-me', ch: 'chat:mute', for_ms: 60000 });
  assert.equal(r.status, 200);
  await assert.rejects(ch.publish({ text: 'hi' }), (e) => e.code === 'forbidden' && /muted/.test(e.message));
  await file.server.api('POST', '/v1/mute', { user: 'mute-me', ch: 'chat:mute', for_ms: 0 });
  const ack = await ch.publish({ text: 'again' });
  assert.equal(ack.seq, 1);
});
