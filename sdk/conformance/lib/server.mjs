// Starts the real `parley` binary: a config in a fresh temporary folder,
// `parley serve --config`, and the ports from its "parley ready http=P tcp=P"
// line. A restart reuses the folder (so the embedded store keeps its data) and
// the ports when they were fixed; with port 0 the restarted server gets new
// ones, which a FaultProxy in front of it is pointed at (proxy.setTarget).
// Used by the conformance harness and by the JS SDK's own tests.
import { execFile, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const PARLEY_BIN =
  process.env.PARLEY_BIN || resolve(here, '../../../build/src/server/parley');

export const DEMO_SECRET = 'sdk-test-secret-demo-0123456789abcdef';
export const DEMO_API_KEY = 'sdk-key-demo';

/** The demo tenant; `extra` lines go into [tenants.demo], `more` after it. */
export function demoTenant({ extra = '', more = '' } = {}) {
  return `[tenants.demo]
secret = "${DEMO_SECRET}"
api_key = "${DEMO_API_KEY}"
${extra}

[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
${more}
`;
}

function b64url(buf) {
  return Buffer.from(buf).toString('base64url');
}

/**
 * An HS256 client token (PROTOCOL.md "Connecting"). `expS` sets `exp` itself
 * (seconds since the epoch), e.g. in the past for a token the server refuses.
 */
export function token(user, { tenant = 'demo', secret = DEMO_SECRET, ttlS = 3600, expS } = {}) {
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const exp = expS ?? Math.floor(Date.now() / 1000) + ttlS;
  const payload = b64url(JSON.stringify({ sub: user, tenant, exp }));
  const sig = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${sig}`;
}

/** A port free right now on 127.0.0.1 (for a server that must keep its port across restarts). */
export function freePort() {
  return new Promise((resolveP, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolveP(port));
    });
  });
}

export class ParleyServer {
  /**
   * `tls` { cert, key } (PEM files) makes `listen` a TLS listener
   * (`listen_tls`): wss:// and https, reached as `localhost` (the name the
   * certificate carries); the harness's own https calls trust it through
   * NODE_EXTRA_CA_CERTS.
   */
  constructor({ tenants = demoTenant(), store = 'embedded', port = 0, tcpPort = 0, serverExtra = '', tls = null } = {}) {
    this.tls = tls;
    if (tls) serverExtra += `\nlisten_tls = true\ntls_cert = "${tls.cert}"\ntls_key = "${tls.key}"\n`;
    this.dir = mkdtempSync(join(tmpdir(), 'parley-sdk-test-'));
    this.logPath = join(this.dir, 'server.log');
    this.configPath = join(this.dir, 'parley.toml');
    writeFileSync(this.configPath, `[server]
listen = "127.0.0.1:${port}"
tcp_listen = "127.0.0.1:${tcpPort}"
store = "${store}"
data_dir = "${this.dir}/data"
log_level = "warn"
${serverExtra}

${tenants}`);
    this.proc = null;
    this.httpPort = 0;
    this.tcpPort = 0;
  }

  get url() {
    return this.tls ? `wss://localhost:${this.httpPort}/v1/ws` : `ws://127.0.0.1:${this.httpPort}/v1/ws`;
  }

  /** http://127.0.0.1:P, or https://localhost:P on a TLS listener. */
  get httpBase() {
    return this.tls ? `https://localhost:${this.httpPort}` : `http://127.0.0.1:${this.httpPort}`;
  }

  log() {
    try {
      return readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  /** Starts the binary; resolves once it printed its ready line. */
  start() {
    return new Promise((resolveP, reject) => {
      const proc = spawn(PARLEY_BIN, ['serve', '--config', this.configPath], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      this.proc = proc;
      let out = '';
      let ready = false;
      const timer = setTimeout(() => {
        if (!ready) reject(new Error(`parley did not start within 20 s:\n${this.log()}`));
      }, 20000);
      proc.stderr.on('data', (d) => appendFileSync(this.logPath, d));
      proc.stdout.on('data', (d) => {
        appendFileSync(this.logPath, d);
        if (ready) return;
        out += d.toString();
        const m = /parley ready http=(\d+) tcp=(\d+)/.exec(out);
        if (m) {
          ready = true;
          clearTimeout(timer);
          this.httpPort = Number(m[1]);
          this.tcpPort = Number(m[2]);
          resolveP(this);
        }
      });
      proc.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      proc.on('exit', (code, sig) => {
        this.exit = { code, sig };
        if (!ready) {
          clearTimeout(timer);
          reject(new Error(`parley exited (${code ?? sig}) before it was ready:\n${this.log()}`));
        }
      });
    });
  }

  /** Sends `sig` and resolves with the exit code once the process is gone. */
  stop(sig = 'SIGKILL') {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(this.exit);
    return new Promise((resolveP) => {
      proc.once('exit', (code, signal) => resolveP({ code, signal }));
      proc.kill(sig);
    });
  }

  async dispose() {
    await this.stop('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A client token minted by the binary itself: `parley token --ttl`. */
  mintToken(user, ttlS = 3600) {
    return new Promise((resolveP, reject) => {
      execFile(PARLEY_BIN, ['token', '--config', this.configPath, '--tenant', 'demo', '--user', user,
        '--ttl', String(ttlS)], (err, stdout, stderr) => {
        if (err) reject(new Error(`parley token failed: ${stderr}`));
        else resolveP(stdout.trim());
      });
    });
  }

  /** An HTTP API call (PROTOCOL.md "HTTP API"). */
  async api(method, path, body) {
    const res = await fetch(`${this.httpBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${DEMO_API_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  }

  /** The value of an unlabelled metric (GET /metrics), or null when absent. */
  async metric(name) {
    const text = await fetch(`${this.httpBase}/metrics`).then((r) => r.text());
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : null;
  }

  /** Every stored message of `ch` (GET /v1/history, paged). */
  async stored(ch) {
    const out = [];
    for (let after = 0; ; ) {
      const r = await this.api('GET', `/v1/history?ch=${encodeURIComponent(ch)}&after=${after}&limit=1000`);
      if (!r.body.msgs?.length) return out;
      out.push(...r.body.msgs);
      after = r.body.msgs.at(-1).seq;
    }
  }
}

/** Resolves when `pred()` is true (checked every 10 ms), or rejects after `ms`. */
export async function until(pred, ms = 10000, what = 'condition') {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
