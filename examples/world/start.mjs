// One command for the world example: starts the app server, then Parley with
// a config that forwards the world's events to it, and tells you which page to
// open. Ctrl-C stops both (Parley drains).
//
//   node examples/world/start.mjs [--parley PATH] [--port 8080] [--parley-port 7700] [--bots 4]
//
// PATH defaults to build/src/server/parley (scripts/demo.sh builds it). Port 0
// picks free ports (the test does). Parley keeps nothing on disk here (store =
// "memory"): stop it and the world and the chat start over.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';

import { startAppServer } from './app_server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');

function parleyConfig({ dir, parleyPort, appPort, secret, apiKey }) {
  return `# Written by examples/world/start.mjs
[server]
listen = "127.0.0.1:${parleyPort}"
store = "memory"
data_dir = "${dir}/data"
log_level = "warn"

[tenants.demo]
secret = "${secret}"
api_key = "${apiKey}"
publish_per_conn_sec = 60

# The world: not stored, presence on, and join / leave / up forwarded to the
# app server, which owns the state and publishes it back.
[tenants.demo.namespaces.world]
durable = false
history = 1
tick_ms = 50
presence = true
upstream = "http://127.0.0.1:${appPort}/events"
forward = ["join", "leave", "up"]

# The chat beside it: a plain Parley channel, kept (in memory) for late joiners.
[tenants.demo.namespaces.chat]
durable = false
history = 100
tick_ms = 0
`;
}

/**
 * Starts the app server and Parley. Resolves with {url, parleyHttp, app,
 * stop()}. opts: parleyBin, port (app server), parleyPort, bots.
 */
export async function startWorld({ parleyBin = join(ROOT, 'build/src/server/parley'), port = 8080,
                                   parleyPort = 7700, bots = 4, quiet = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'parley-world-'));
  const secret = randomBytes(24).toString('hex');
  const apiKey = randomBytes(24).toString('hex');
  const app = await startAppServer({ port, apiKey, secret, bots });
  writeFileSync(join(dir, 'parley.toml'), parleyConfig({ dir, parleyPort, appPort: app.port, secret, apiKey }));
  const parley = spawn(parleyBin, ['serve', '--config', join(dir, 'parley.toml')],
                       { stdio: ['ignore', 'pipe', quiet ? 'ignore' : 'inherit'] });
  let httpPort;
  try {
    httpPort = await new Promise((ok, fail) => {
      let out = '';
      parley.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/parley ready http=(\d+)/);
        if (m) ok(Number(m[1]));
      });
      parley.once('error', fail);
      parley.once('exit', (code) => fail(new Error(`parley exited (${code}) before it was ready: ${out}`)));
    });
  } catch (e) {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  parley.stdout.resume();
  const parleyHttp = `http://127.0.0.1:${httpPort}`;
  app.setParley(parleyHttp, `ws://127.0.0.1:${httpPort}/v1/ws`);
  let stopped = false;
  return {
    url: `http://127.0.0.1:${app.port}/`,
    parleyHttp,
    app,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (parley.exitCode === null) {
        parley.kill('SIGTERM');
        await new Promise((r) => {
          parley.once('exit', r);
          setTimeout(() => { parley.kill('SIGKILL'); r(); }, 10_000);
        });
      }
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const w = await startWorld({
    parleyBin: arg('--parley', undefined),
    port: Number(arg('--port', 8080)),
    parleyPort: Number(arg('--parley-port', 7700)),
    bots: Number(arg('--bots', 4)),
  }).catch((e) => {
    console.error(`world example: ${e.message}`);
    process.exit(1);
  });
  console.log(`
  Parley is running on ${w.parleyHttp} (WebSocket /v1/ws, HTTP API, /metrics),
  the world's app server beside it.

  Open ${w.url} in a browser (in two tabs, to see each other): click or use
  the arrow keys to move, type to chat.

  Ctrl-C stops both.
`);
  const stop = async () => { await w.stop(); process.exit(0); };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
