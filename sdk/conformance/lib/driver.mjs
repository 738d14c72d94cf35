// Driver: one running SDK driver program (DRIVER.md), started from a shell
// command. Every line it prints is parsed and kept with the time the harness
// read it (`t`, performance.now(), the clock FaultProxy records connects on);
// `next()` awaits an event by predicate, so a scenario waits for what the
// application saw, never for a fixed time.
//
// Runs on the harness's Node event loop.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';

const STDERR_KEPT = 64 * 1024;

/** The driver command: --driver on the command line, else SDK_DRIVER. */
export function driverCommand() {
  const cmd = process.env.SDK_DRIVER;
  if (!cmd) throw new Error('SDK_DRIVER is not set (sdk/conformance/run.sh sets it from --sdk or --driver)');
  return cmd;
}

function matches(e, want) {
  if (typeof want === 'function') return want(e);
  for (const [k, v] of Object.entries(want)) if (e[k] !== v) return false;
  return true;
}

export class Driver {
  constructor(name, cmd = driverCommand()) {
    this.name = name;
    this.cmd = cmd;
    this.events = [];
    this.stderr = '';
    this.waiters = new Set();
    this.exited = null;
    // A process group of its own (detached), so `kill()` ends whatever the
    // driver started too; if the harness itself dies the driver reads EOF on
    // stdin and exits (DRIVER.md), and run.sh sweeps what is left.
    this.proc = spawn('/bin/sh', ['-c', `exec ${cmd}`], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: process.env,
      detached: true,
    });
    Driver.live.add(this);
    this.exit = new Promise((r) => this.proc.on('exit', (code, signal) => {
      this.exited = { code, signal };
      // What the driver started may outlive it: its group goes with it.
      this.kill();
      Driver.live.delete(this);
      r(this.exited);
    }));
    this.proc.stdin.on('error', () => {}); // a driver that died; its exit says why
    this.proc.stderr.on('data', (d) => {
      this.stderr = (this.stderr + d.toString()).slice(-STDERR_KEPT);
    });
    createInterface({ input: this.proc.stdout }).on('line', (line) => this.#onLine(line));
  }

  #onLine(line) {
    let e;
    try {
      e = JSON.parse(line);
    } catch {
      e = { ev: 'bad_line', line };
    }
    if (e === null || typeof e !== 'object' || Array.isArray(e)) e = { ev: 'bad_line', line };
    e.t = performance.now();
    this.events.push(e);
    for (const w of [...this.waiters]) {
      if (w.from <= this.events.length - 1 && matches(e, w.want)) w.done(e);
    }
  }

  /** Starts the driver and waits for its `ready` (failing at once if it exits first). */
  async start() {
    const died = this.exit.then((r) => {
      throw new Error(`${this.name}: the driver exited before ready (${JSON.stringify(r)}): ${this.cmd}\n${this.stderr}`);
    });
    died.catch(() => {}); // settled by the race below, or after a normal exit
    const ready = await Promise.race([this.next({ ev: 'ready' }, { timeoutMs: 20000 }), died]);
    this.sdk = ready.sdk;
    // What the SDK supports beyond the base protocol (DRIVER.md `ready.features`).
    this.features = Array.isArray(ready.features) ? ready.features : [];
    return ready;
  }

  send(cmd) {
    this.proc.stdin.write(`${JSON.stringify(cmd)}\n`);
  }

  /** The events so far matching `want` (an object of fields, or a predicate). */
  all(want) {
    return this.events.filter((e) => matches(e, want));
  }

  count(want) {
    return this.all(want).length;
  }

  /**
   * Resolves with the first event matching `want` at index >= `from` (default:
   * any, including ones already seen), or rejects after `timeoutMs`.
   */
  next(want, { from = 0, timeoutMs = 10000, what } = {}) {
    for (let i = from; i < this.events.length; i++) {
      if (matches(this.events[i], want)) return Promise.resolve(this.events[i]);
    }
    return new Promise((resolveP, reject) => {
      const w = { want, from };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`${this.name}: no ${what ?? JSON.stringify(want)} within ${timeoutMs} ms` +
          (this.exited ? ` (the driver exited: ${JSON.stringify(this.exited)})` : '')));
      }, timeoutMs);
      w.done = (e) => {
        clearTimeout(timer);
        this.waiters.delete(w);
        resolveP(e);
      };
      this.waiters.add(w);
    });
  }

  /** Resolves once `count` events match `want` (or rejects after `timeoutMs`). */
  async nth(want, count, { timeoutMs = 10000, what } = {}) {
    let seen = 0;
    for (let i = 0; i < this.events.length; i++) {
      if (matches(this.events[i], want) && ++seen === count) return this.events[i];
    }
    return new Promise((resolveP, reject) => {
      const w = { want, from: 0 };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`${this.name}: ${seen} of ${count} ${what ?? JSON.stringify(want)} within ${timeoutMs} ms` +
          (this.exited ? ` (the driver exited: ${JSON.stringify(this.exited)})` : '')));
      }, timeoutMs);
      w.done = (e) => {
        if (++seen < count) return;
        clearTimeout(timer);
        this.waiters.delete(w);
        resolveP(e);
      };
      this.waiters.add(w);
    });
  }

  /**
   * For a failure's report: the last events other than msg/published (where
   * the story is), a summary of the streams, the last events, and stderr.
   */
  tail(n = 15) {
    const fmt = (list) => list.map((e) => `  ${JSON.stringify(e)}`).join('\n');
    const bulk = new Set(['msg', 'published', 'state']);
    const control = this.events.filter((e) => !bulk.has(e.ev)).slice(-40);
    const streams = new Map();
    for (const e of this.events) {
      if (e.ev !== 'msg' && e.ev !== 'published') continue;
      const k = `${e.ev} ${e.ch}`;
      const s = streams.get(k) ?? { count: 0, first: e.seq, last: e.seq };
      s.count++;
      s.last = e.seq;
      streams.set(k, s);
    }
    const sum = [...streams].map(([k, s]) => `  ${k}: ${s.count} (seq ${s.first} … ${s.last})`).join('\n');
    return `--- driver ${this.name} (${this.cmd}): ${this.events.length} events\n` +
      `control events (last 40):\n${fmt(control)}\nstreams:\n${sum}\n` +
      `last ${n} events:\n${fmt(this.events.slice(-n))}\n` +
      `--- its stderr (tail)\n${this.stderr.slice(-4000)}`;
  }

  /** SIGKILL to the driver's whole process group (a no-op once it is gone). */
  kill() {
    try {
      process.kill(-this.proc.pid, 'SIGKILL');
    } catch {
      // ESRCH: the group is gone already
    }
  }

  /** Asks the driver to exit; kills its process group after `graceMs`. */
  async stop(graceMs = 3000) {
    if (this.exited) return this.exited;
    this.send({ cmd: 'exit' });
    this.proc.stdin.end();
    const timer = setTimeout(() => {
      this.killedAfterMs = graceMs;
      this.kill();
    }, graceMs);
    const r = await this.exit;
    clearTimeout(timer);
    return r;
  }
}

/** Every driver started and not yet exited (killed with the harness). */
Driver.live = new Set();

// A harness that exits (normally, on an uncaught error or on run.sh's
// timeout's SIGTERM) takes its drivers' process groups with it.
process.on('exit', () => {
  for (const d of Driver.live) d.kill();
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.error(`harness: ${sig}: killing ${Driver.live.size} driver process group(s)`);
    process.exit(1);
  });
}
