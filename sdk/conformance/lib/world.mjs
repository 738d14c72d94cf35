// World: what one scenario runs against: real servers, one FaultProxy per
// client (so a fault hits exactly the client it is aimed at), app servers
// for upstream, and driver processes. `scenario()` wraps node:test's `test()`:
// it builds a World, runs the scenario, adds every driver's last events and
// the servers' logs to a failure, and tears everything down.
//
// Runs on the harness's Node event loop.
import { after, test } from 'node:test';
import { ParleyServer, demoTenant, token } from './server.mjs';
import { FaultProxy } from './proxy.mjs';
import { Driver } from './driver.mjs';
import { AppServer } from './app_server.mjs';

/** ws (default), wss or tcp: which transport the drivers are given (SDK_TRANSPORT). */
export const TRANSPORT = ['tcp', 'wss'].includes(process.env.SDK_TRANSPORT) ? process.env.SDK_TRANSPORT : 'ws';

// wss: the certificate run.sh made for localhost (SDK_TLS_CERT / SDK_TLS_KEY),
// served by every server and handed to each driver as its CA (`caFile`).
const TLS = TRANSPORT === 'wss' ? { cert: process.env.SDK_TLS_CERT, key: process.env.SDK_TLS_KEY } : null;
if (TLS && !(TLS.cert && TLS.key)) throw new Error('--transport wss needs SDK_TLS_CERT and SDK_TLS_KEY (run.sh sets them)');

/**
 * json (default) or msgpack: the encoding every client connects with unless a
 * scenario names one (SDK_ENCODING, run.sh --encoding). In JSON runs `enc` is
 * left out of `connect`, so a driver that knows no encodings runs unchanged.
 */
export const ENCODING = process.env.SDK_ENCODING === 'msgpack' ? 'msgpack' : 'json';

/** Short reconnect delays, so a scenario's outages cost little time. */
export const FAST = { minMs: 50, maxMs: 400, factor: 2 };

export { demoTenant, token };

export class World {
  constructor() {
    this.servers = [];
    this.proxies = [];
    this.drivers = [];
    this.apps = [];
  }

  /** Starts a server (ParleyServer options: tenants, serverExtra, ...). */
  async server(opts = {}) {
    const s = new ParleyServer({ tls: TLS, ...opts });
    this.servers.push(s);
    await s.start();
    return s;
  }

  /** An app server recording what the namespace upstream POSTs. */
  async app() {
    const a = new AppServer();
    this.apps.push(a);
    await a.listen();
    return a;
  }

  #target(server) {
    return TRANSPORT === 'tcp' ? server.tcpPort : server.httpPort;
  }

  /** A proxy in front of `server` (followed across its restarts). */
  async proxy(server) {
    const p = new FaultProxy(this.#target(server));
    p.server_ = server;
    this.proxies.push(p);
    await p.listen();
    return p;
  }

  /** Starts a driver process and waits for its `ready`. */
  async driver(name) {
    const d = new Driver(name);
    this.drivers.push(d);
    await d.start();
    return d;
  }

  /**
   * A connected client: its own proxy in front of `server` and a driver that
   * connected through it as `user` (welcome seen, unless `awaitOpen` is
   * false). Options go into `connect`.
   */
  async client(server, user, { reconnect = FAST, heartbeatMs, tok, direct = false, awaitOpen = true,
    enc = ENCODING, deltas = false, recordDown = false } = {}) {
    const proxy = direct ? null : await this.proxy(server);
    const d = await this.driver(user);
    const url = direct
      ? (TRANSPORT === 'tcp' ? `tcp://127.0.0.1:${server.tcpPort}` : server.url)
      : { tcp: proxy.tcpUrl, ws: proxy.wsUrl, wss: proxy.wssUrl }[TRANSPORT];
    const cmd = { cmd: 'connect', url, token: tok ?? token(user), reconnect };
    if (TLS) cmd.caFile = TLS.cert;
    if (heartbeatMs !== undefined) cmd.heartbeatMs = heartbeatMs;
    if (enc !== 'json') cmd.enc = enc;
    if (deltas) cmd.deltas = true;
    if (proxy && recordDown) proxy.recordDown(); // from the first byte, for FaultProxy.countDown
    d.send(cmd);
    if (awaitOpen) {
      await d.next({ ev: 'open' }, { what: `${user}'s first open` });
      // The SDK really speaks the encoding asked for: read from its first
      // bytes on the wire (not from what the driver says), where not TLS.
      const seen = proxy?.heads[0] !== undefined ? FaultProxy.encodingOf(proxy.heads[0]) : null;
      if (seen !== null && seen !== enc) {
        throw new Error(`${user} was asked to connect in ${enc} but its first bytes ask for ${seen}: ` +
          JSON.stringify(proxy.heads[0].slice(0, 300)));
      }
    }
    d.proxy = proxy;
    d.user = user;
    return d;
  }

  /**
   * Several clients at once (their drivers start in parallel: a slow-starting
   * runtime costs its start-up once per scenario, not once per client). Each
   * spec is a user name or { user, ...client() options }.
   */
  clients(server, ...specs) {
    return Promise.all(specs.map((s) => (typeof s === 'string'
      ? this.client(server, s)
      : this.client(server, s.user, s))));
  }

  /** Joins `ch` on every driver given and waits for each one's `joined`. */
  async joinAll(ch, ...drivers) {
    const from = drivers.map((d) => d.events.length);
    for (const d of drivers) d.send({ cmd: 'join', ch });
    await Promise.all(drivers.map((d, k) =>
      d.next({ ev: 'joined', ch }, { from: from[k], what: `joined ${ch}` })));
  }

  /** Stops `server` with `sig`, starts it again on its data, re-points its proxies. */
  async restart(server, sig = 'SIGKILL', { downMs = 0 } = {}) {
    const exit = await server.stop(sig);
    if (downMs) await new Promise((r) => setTimeout(r, downMs));
    await server.start();
    for (const p of this.proxies) if (p.server_ === server) p.setTarget(this.#target(server));
    return exit;
  }

  diagnostics() {
    const parts = this.drivers.map((d) => d.tail());
    for (const s of this.servers) parts.push(`--- server log (tail)\n${s.log().slice(-3000)}`);
    return parts.join('\n');
  }

  async dispose() {
    await Promise.all(this.drivers.map((d) => d.stop().catch(() => {})));
    await Promise.all(this.proxies.map((p) => p.close()));
    await Promise.all(this.apps.map((a) => a.close()));
    for (const s of this.servers) await s.dispose();
  }
}

// How long a World's teardown may take (drivers are given 3 s to exit, then
// killed): past it the scenario fails and whatever is left is killed.
const DISPOSE_MS = 10000;

// Once every scenario of the file ran, whatever still runs 5 s later would
// keep the file's process from exiting: name it and fail the file instead of
// hanging until run.sh's per-file timeout.
after(() => {
  setTimeout(() => {
    console.error(`harness: still running 5 s after the last scenario: ${process.getActiveResourcesInfo().join(', ')}; exiting`);
    process.exit(1);
  }, 5000).unref();
});

function within(promise, ms, onLate) {
  let timer;
  const late = new Promise((resolveP) => {
    timer = setTimeout(() => resolveP(onLate()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * A node:test test with a fresh World; a failure carries the World's
 * diagnostics. The scenario's own deadline (`timeoutMs`) kills every
 * driver's process group and fails with what each one was doing, rather
 * than leaving node:test's timeout to abandon a World still running (its
 * drivers and servers would then keep the file's process alive until
 * run.sh's per-file timeout).
 */
export function scenario(name, fn, { timeoutMs = 30000 } = {}) {
  test(name, { timeout: timeoutMs + DISPOSE_MS + 5000 }, async () => {
    const w = new World();
    let timer;
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const running = w.drivers.filter((d) => !d.exited).map((d) => `${d.name} (pid ${d.proc.pid})`);
        reject(new Error(`scenario "${name}" did not finish within ${timeoutMs} ms; ` +
          `killing the process groups of the drivers still running: ${running.join(', ') || 'none'}`));
      }, timeoutMs);
    });
    let failure = null;
    try {
      await Promise.race([fn(w), deadline]);
    } catch (err) {
      failure = err;
    } finally {
      clearTimeout(timer);
    }
    if (failure) {
      // Diagnostics first (the drivers' events as they were), then the kill.
      const diag = w.diagnostics();
      for (const d of w.drivers) d.kill();
      failure = new Error(`${failure.message}\n${diag}`, { cause: failure });
    }
    let stuck = null;
    await within(w.dispose(), DISPOSE_MS, () => {
      stuck = `the teardown of "${name}" did not finish within ${DISPOSE_MS} ms ` +
        `(drivers: ${w.drivers.map((d) => `${d.name} ${JSON.stringify(d.exited)}`).join(', ')}); killed what was left`;
      for (const d of w.drivers) d.kill();
      for (const s of w.servers) s.proc?.kill('SIGKILL');
    });
    if (failure) throw failure;
    if (stuck) throw new Error(stuck);
  });
}
