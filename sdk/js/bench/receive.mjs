#!/usr/bin/env node
// The JS SDK's receive path, measured as sdk/conformance/BENCH.md defines it:
// server frames (JSON text, as a WebSocket delivers them) replayed from
// memory into the client's socket handler, decoded, ordered and delivered to
// the application's `msg` listener, on one core, no network. The socket is a
// stand-in passed through the public `WebSocket` option (the SDK tests'
// scripted server); it answers hello and join as the server would, so the
// client is in its ordinary joined state.
//   node sdk/js/bench/receive.mjs [--msgs 200000] [--batch 1] [--runs 5] [--enc json|msgpack]
// Prints one JSON line per shape: msgs per second, the median of the runs,
// and per second of the process's CPU time (steadier on a shared machine).
import { ParleyClient } from '../src/index.js';
import { scriptedServer } from '../test/support/scripted_server.mjs';

function arg(name, dflt) {
  const k = process.argv.indexOf(`--${name}`);
  return k > 0 ? Number(process.argv[k + 1]) : dflt;
}
const MSGS = arg('msgs', 200000);
const RUNS = arg('runs', 5);
const BATCHES = process.argv.includes('--batch') ? [arg('batch', 1)] : [1, 16];
const ENCS = process.argv.includes('--enc') ? [process.argv[process.argv.indexOf('--enc') + 1]] : ['json', 'msgpack'];
const CH = 'chat:bench';
const TEXT = 'x'.repeat(64);

// BENCH.md's message: the server's `msg` frame with a small object body.
function msgFrame(seq) {
  return { op: 'msg', ch: CH, seq, from: 'u-sender', id: `c-${seq}`, ts: 1764460800123 + seq,
    body: { i: seq, text: TEXT } };
}

// Frames of `batch` messages each (1: one object per frame, else an array,
// as the server batches per tick), seqs from `first` on, in the server's
// encoding (JSON text, or MessagePack bytes).
function frames(net, first, count, batch) {
  const out = [];
  for (let s = first; s < first + count; s += batch) {
    const n = Math.min(batch, first + count - s);
    if (batch === 1) out.push(net.encode(msgFrame(s)));
    else out.push(net.encode(Array.from({ length: n }, (_, k) => msgFrame(s + k))));
  }
  return out;
}

async function run(batch, encoding) {
  const net = scriptedServer({ encoding });
  const client = new ParleyClient({ url: 'ws://bench.invalid/v1/ws', token: 't', WebSocket: net.WebSocket, encoding });
  const ch = client.channel(CH);
  let count = 0;
  let lastSeq = 0;
  let sum = 0;
  ch.on('msg', (m) => {
    count++;
    lastSeq = m.seq;
    sum += m.body.i;
  });
  await ch.join();
  const sock = net.sock;
  const warm = Math.min(20000, MSGS);
  for (const data of frames(net, 1, warm, batch)) sock.onmessage({ data });
  const timed = frames(net, warm + 1, MSGS, batch); // encoded before the clock starts
  count = 0;
  sum = 0;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (const data of timed) sock.onmessage({ data });
  const ns = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(c0); // µs of the process (GC threads included)
  client.close();
  const expectSum = ((warm + 1 + warm + MSGS) * MSGS) / 2;
  if (count !== MSGS || lastSeq !== warm + MSGS || sum !== expectSum) {
    throw new Error(`delivered ${count} of ${MSGS} (last seq ${lastSeq}): the bench measured nothing`);
  }
  return { wall: (MSGS * 1e9) / ns, cpu: (MSGS * 1e6) / (cpu.user + cpu.system) };
}

for (const enc of ENCS) for (const batch of BATCHES) {
  const rates = [];
  const cpus = [];
  for (let r = 0; r < RUNS; r++) {
    const x = await run(batch, enc);
    rates.push(x.wall);
    cpus.push(x.cpu);
  }
  const sorted = [...rates].sort((a, b) => a - b);
  const cpuSorted = [...cpus].sort((a, b) => a - b);
  console.log(JSON.stringify({
    sdk: 'js', runtime: `node ${process.version}`, enc, batch, msgs: MSGS,
    msgs_per_sec: Math.round(sorted[Math.floor(sorted.length / 2)]),
    runs: rates.map(Math.round),
    msgs_per_cpu_sec: Math.round(cpuSorted[Math.floor(cpuSorted.length / 2)]),
  }));
}
