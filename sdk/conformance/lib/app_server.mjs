// AppServer: the application's HTTP endpoint a namespace's `upstream` POSTs
// its event batches to (PROTOCOL.md "Upstream forwarding"). It answers 200 and
// records every event, so a scenario can check what the game server received.
//
// Runs on the harness's Node event loop.
import { createServer } from 'node:http';

const MAX_BODY = 4 << 20;

export class AppServer {
  constructor() {
    this.events = [];
    this.waiters = new Set();
    this.server = createServer((req, res) => this.#handle(req, res));
    this.port = 0;
  }

  listen() {
    return new Promise((resolveP) => {
      this.server.listen(0, '127.0.0.1', () => {
        this.port = this.server.address().port;
        resolveP(this.port);
      });
    });
  }

  get url() {
    return `http://127.0.0.1:${this.port}/events`;
  }

  #handle(req, res) {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => {
      body += d;
      if (body.length > MAX_BODY) req.destroy();
    });
    req.on('end', () => {
      let batch;
      try {
        batch = JSON.parse(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const e of Array.isArray(batch) ? batch : [batch]) {
        this.events.push(e);
        for (const w of [...this.waiters]) w(e);
      }
    });
  }

  /** Resolves with the first event matching `pred` (seen or to come), or rejects after `timeoutMs`. */
  next(pred, { timeoutMs = 10000, what = 'an upstream event' } = {}) {
    const seen = this.events.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolveP, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        reject(new Error(`app server: no ${what} within ${timeoutMs} ms; got ${JSON.stringify(this.events)}`));
      }, timeoutMs);
      const w = (e) => {
        if (!pred(e)) return;
        clearTimeout(timer);
        this.waiters.delete(w);
        resolveP(e);
      };
      this.waiters.add(w);
    });
  }

  close() {
    this.server.closeAllConnections?.();
    return new Promise((r) => this.server.close(() => r()));
  }
}
