// The JavaScript SDK's receive path measured the way ReceiveBench.cs measures
// the C# one (the peer figure for its results): the same server-shaped msg
// frames, handed as strings (what a browser WebSocket gives) to the client
// through a stand-in WebSocket, parsed, ordered and delivered to a handler
// that reads the body, on Node's one thread. Prints one JSON line per
// configuration, medians of --runs runs, per second of wall and of CPU time.
//   node sdk/csharp/bench/js_peer.mjs [--messages 300000] [--batch 1,20] [--pad 0,256] [--runs 5]
import { ParleyClient } from '../../js/src/index.js';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), []));
const messages = Number(args.messages ?? 300000);
const runs = Number(args.runs ?? 5);
const batches = (args.batch ?? '1,20').split(',').map(Number);
const pads = (args.pad ?? '0,256').split(',').map(Number);

let socket = null;
class FeedSocket {
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    socket = this;
  }
  send(data) {
    this.sent.push(data);
  }
  close() {}
}

function frames(batch, pad) {
  const out = [];
  const padding = 'x'.repeat(pad);
  for (let seq = 1; seq <= messages;) {
    const n = Math.min(batch, messages - seq + 1);
    const parts = [];
    for (let k = 0; k < n; k++, seq++) {
      let body = `{"i":${seq - 1},"tag":"bench"`;
      if (pad > 0) body += `,"pad":"${padding}"`;
      parts.push(`{"op":"msg","ch":"chat:bench","seq":${seq},"from":"u2","id":"k3j9x0ab-${seq}",` +
        `"ts":${1764460800000 + seq},"body":${body}}}`);
    }
    out.push(batch > 1 ? `[${parts.join(',')}]` : parts[0]);
  }
  return out;
}

async function run(list) {
  const client = new ParleyClient({ url: 'ws://bench/v1/ws', token: 't', WebSocket: FeedSocket, publishTimeoutMs: 0 });
  const ch = client.channel('chat:bench');
  let delivered = 0;
  let sum = 0;
  ch.on('msg', (m) => {
    delivered++;
    sum += m.body.i;
  });
  const joined = ch.join();
  const ws = socket;
  ws.readyState = 1;
  ws.onopen();
  const hello = JSON.parse(ws.sent.at(-1));
  ws.onmessage({ data: `{"op":"welcome","rid":${hello.rid},"conn":"c1","user":"u1","tenant":"demo","heartbeat_ms":25000}` });
  const join = JSON.parse(ws.sent.at(-1));
  ws.onmessage({ data: `{"op":"joined","rid":${join.rid},"ch":"chat:bench","seq":0,"recovered":true}` });
  await joined;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (const f of list) ws.onmessage({ data: f });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  if (delivered !== messages || sum !== (messages * (messages - 1)) / 2) throw new Error(`delivered ${delivered}`);
  client.close();
  return { wall: messages / wall, cpu: messages / ((cpu.user + cpu.system) / 1e6) };
}

for (const pad of pads) {
  for (const batch of batches) {
    const list = frames(batch, pad);
    await run(list); // warm-up (JIT)
    const r = [];
    for (let i = 0; i < runs; i++) r.push(await run(list));
    const med = (k) => r.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(runs / 2)];
    console.log(JSON.stringify({
      sdk: 'js', runtime: `node ${process.version}`, codec: 'json', messages, batch, pad, runs,
      msgs_per_s_median: Math.round(med('wall')), msgs_per_cpu_s_median: Math.round(med('cpu')),
    }));
  }
}
