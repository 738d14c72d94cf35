// ctest csharp_sdk_bot: the real server (port 0, started by the SDK tests'
// shared sdk/conformance/lib/server.mjs) and two C# bots on one channel, u1
// over WebSocket and u2 over raw TCP (server.tcp_listen); each publishes 150
// messages and must see all 300, seqs rising by one, every publish
// acknowledged (examples/bot/Bot.cs checks that and exits non-zero otherwise).
//   node sdk/csharp/tools/bot_test.mjs <parley-bot.exe>   (PARLEY_BIN: the server)
import { spawn } from 'node:child_process';
import { ParleyServer, token } from '../../conformance/lib/server.mjs';

const bot = process.argv[2];
const server = await new ParleyServer().start();

function runBot(user, url) {
  return new Promise((resolve) => {
    const args = [bot, '--url', url, '--token', token(user), '--channel', 'chat:bots', '--count', '150',
      '--expect', '300', '--since', '0', '--timeout-s', '60'];
    const p = spawn('mono', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) => resolve({ user, code, out: out.trim() }));
  });
}

let failed = 0;
try {
  const results = await Promise.all([
    runBot('u1', server.url),
    runBot('u2', `tcp://127.0.0.1:${server.tcpPort}`),
  ]);
  for (const r of results) {
    console.log(`${r.user}: ${r.out} (exit ${r.code})`);
    let summary = null;
    try {
      summary = JSON.parse(r.out);
    } catch {
      // not a summary: counted as a failure below
    }
    if (r.code !== 0 || !summary || !summary.ok || summary.received !== 300 || summary.published !== 150) failed++;
  }
} finally {
  if (failed) console.log(server.log());
  await server.dispose();
}
console.log(`${2 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
