#!/usr/bin/env node
// The JS SDK's conformance driver (sdk/conformance/DRIVER.md): an application
// of the SDK's public API that takes commands on stdin and prints what it saw
// on stdout, one JSON object per line. Logs go to stderr.
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { ParleyClient } from '../src/index.js';

const version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

function out(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

let client = null;
let currentToken = null;
let opens = 0;
const watched = new Set();

function channel(name) {
  const ch = client.channel(name);
  if (watched.has(name)) return ch;
  watched.add(name);
  ch.on('msg', (m) => out({ ev: 'msg', ch: name, seq: m.seq, from: m.from, id: m.id, body: m.body }));
  ch.on('state', (s) => out({ ev: 'state', ch: name, from: s.from, key: s.key, body: s.body, tick: s.tick, ts: s.ts }));
  ch.on('presence', (p) => out({ ev: 'presence', ch: name, join: p.join, leave: p.leave }));
  ch.on('joined', (j) => out({ ev: 'joined', ch: name, seq: j.seq, recovered: j.recovered, epoch: j.epoch ?? 1,
    members: j.members }));
  ch.on('gap', (g) => out({ ev: 'gap', ch: name, from: g.from, to: g.to }));
  ch.on('reset', (r) => out({ ev: 'reset', ch: name, lastSeq: r.lastSeq, seq: r.seq }));
  ch.on('error', (e) => out({ ev: 'error', ch: name, code: e.code, msg: e.message }));
  return ch;
}

function connect(cmd) {
  if (client) return out({ ev: 'error', code: 'bad_cmd', msg: 'already connected' });
  if (!/^wss?:\/\//.test(cmd.url ?? '')) {
    return out({ ev: 'error', code: 'unsupported', msg: `the JS SDK speaks WebSocket only: ${cmd.url}` });
  }
  currentToken = cmd.token;
  const opts = { url: cmd.url, token: () => currentToken, WebSocket };
  if (cmd.reconnect) opts.reconnect = cmd.reconnect;
  if (cmd.heartbeatMs !== undefined) opts.heartbeatMs = cmd.heartbeatMs;
  if (cmd.enc !== undefined) opts.encoding = cmd.enc;
  if (cmd.deltas) opts.stateDeltas = true;
  try {
    client = new ParleyClient(opts);
  } catch (e) {
    return out({ ev: 'error', code: 'unsupported', msg: e.message });
  }
  client.on('open', (w) => out({ ev: 'open', conn_id: w.conn, reconnect: opens++ > 0, enc: w.enc, deltas: w.stateDeltas }));
  client.on('disconnect', (d) => out({ ev: 'disconnect', code: d.code, reason: d.reason,
    willReconnect: d.willReconnect, delayMs: d.delayMs }));
  client.on('bye', (b) => out({ ev: 'bye', code: b.code, reconnectMs: b.reconnect_ms }));
  client.on('retry', (r) => out({ ev: 'retry', op: r.op, ch: r.ch, code: r.code, retryMs: r.retryMs }));
  client.on('direct', (d) => out({ ev: 'direct', body: d.body }));
  client.on('error', (e) => out({ ev: 'error', code: e.code ?? 'error', msg: e.message }));
  client.on('closed', () => out({ ev: 'closed' }));
  client.connect().catch((e) => out({ ev: 'error', code: e.code ?? 'error', msg: e.message }));
}

function publish(cmd) {
  const ch = channel(cmd.ch);
  const start = cmd.start ?? 0;
  const pad = cmd.pad ? 'x'.repeat(cmd.pad) : undefined;
  for (let k = 0; k < cmd.n; k++) {
    const i = start + k;
    const body = { ...(cmd.body ?? {}), i };
    if (cmd.tag !== undefined) body.tag = cmd.tag;
    if (pad !== undefined) body.pad = pad;
    ch.publish(body).then(
      (a) => out({ ev: 'published', ch: cmd.ch, i, id: a.id, seq: a.seq, dup: a.dup }),
      (e) => out({ ev: 'publish_failed', ch: cmd.ch, i, code: e.code ?? 'error' }),
    );
  }
}

function handle(cmd) {
  if (cmd.cmd !== 'connect' && cmd.cmd !== 'exit' && cmd.cmd !== 'token' && !client) {
    return out({ ev: 'error', code: 'bad_cmd', msg: `${cmd.cmd} before connect` });
  }
  switch (cmd.cmd) {
    case 'connect':
      return connect(cmd);
    case 'token':
      currentToken = cmd.token;
      return;
    case 'join':
      return channel(cmd.ch).join(cmd.since !== undefined ? { since: cmd.since } : {})
        .catch((e) => out({ ev: 'error', ch: cmd.ch, code: e.code ?? 'error', msg: e.message }));
    case 'leave':
      return channel(cmd.ch).leave();
    case 'publish':
      return publish(cmd);
    case 'state':
      return channel(cmd.ch).setState(cmd.key, cmd.body);
    case 'up':
      try {
        channel(cmd.ch).up(cmd.body);
      } catch (e) {
        out({ ev: 'error', ch: cmd.ch, code: e.code ?? 'error', msg: e.message });
      }
      return;
    case 'close':
      return client.close();
    case 'exit':
      client?.close();
      process.exit(0);
      return;
    default:
      return out({ ev: 'error', code: 'unknown_cmd', cmd: cmd.cmd });
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch {
    return out({ ev: 'error', code: 'bad_cmd', msg: 'not JSON' });
  }
  handle(cmd);
}).on('close', () => {
  client?.close();
  process.exit(0);
});

out({ ev: 'ready', sdk: 'js', version, features: ['state_delta'] });
