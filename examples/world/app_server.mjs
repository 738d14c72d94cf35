// The world example's app server: the game's own server beside Parley.
//
// It keeps the authoritative world (where each avatar is, where it is going)
// from the events Parley forwards to it (docs/PROTOCOL.md "Upstream
// forwarding": join, leave and the clients' `up` move requests), moves the
// avatars and a few simulated ones ("bots") ten times a second, and tells
// every client through Parley's HTTP API: POST /v1/publish of the world's
// state to `world:main`, POST /v1/send of a welcome to one connection that
// just joined. Clients never talk to each other or to this server directly:
// Parley does the fan-out.
//
// It also serves the page (public/), the SDK (sdk/js/src as /sdk/) and, for
// this demo only, a token for any guest name (a real game checks who asks).
// Node >= 18, no dependencies.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const PUBLIC_DIR = join(HERE, 'public');
const SDK_DIR = join(HERE, '..', '..', 'sdk', 'js', 'src');

export const WORLD = { w: 960, h: 600 };
const SPEED = 160;           // world units per second
const TICK_MS = 100;         // the world moves and is published ten times a second
const MAX_EVENT_BODY = 1 << 20;
const COLORS = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#46f0f0', '#f032e6',
                '#bcf60c', '#008080', '#e6beff', '#9a6324', '#800000', '#aaffc3', '#808000'];

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
                '.css': 'text/css; charset=utf-8', '.png': 'image/png' };

function b64url(buf) {
  return Buffer.from(buf).toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
}

// A client token (docs/PROTOCOL.md "Connecting"): HS256 with the tenant's secret.
export function mintToken({ secret, tenant, user, ttlS = 3600 }) {
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = b64url(JSON.stringify({ sub: user, tenant, exp: Math.floor(Date.now() / 1000) + ttlS }));
  const sig = b64url(createHmac('sha256', secret).update(`${head}.${claims}`).digest());
  return `${head}.${claims}.${sig}`;
}

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
const finite = (v) => typeof v === 'number' && Number.isFinite(v);

/**
 * The authoritative world. Pure state and rules, no I/O (the server below
 * feeds it events and publishes what it says).
 */
export class World {
  #avatars = new Map();  // id -> {id, x, y, tx, ty, color, bot, conns}
  #random;
  #colorIndex = 0;
  moves = 0;             // move requests accepted

  constructor({ bots = 4, random = Math.random } = {}) {
    this.#random = random;
    for (let i = 1; i <= bots; i++) this.#add(`bot-${i}`, true);
  }

  #add(id, bot) {
    let a = this.#avatars.get(id);
    if (!a) {
      const x = 60 + this.#random() * (WORLD.w - 120);
      const y = 60 + this.#random() * (WORLD.h - 120);
      a = { id, x, y, tx: x, ty: y, color: COLORS[this.#colorIndex++ % COLORS.length], bot, conns: 0 };
      this.#avatars.set(id, a);
    }
    return a;
  }

  // Upstream `join` / `leave` are per connection: an avatar stays while its
  // user has a connection in the world.
  join(user) { this.#add(user, false).conns++; }
  leave(user) {
    const a = this.#avatars.get(user);
    if (a && !a.bot && --a.conns <= 0) this.#avatars.delete(user);
  }

  // An `up` from a client: {type:"move", x, y} (go there) or {type:"step", dx, dy}
  // (a key press: a short step). Anything else, or numbers out of reason, is ignored:
  // clients ask, the world decides.
  request(user, body) {
    const a = this.#avatars.get(user);
    if (!a || a.bot || !body || typeof body !== 'object') return false;
    if (body.type === 'move' && finite(body.x) && finite(body.y)) {
      a.tx = clamp(body.x, 12, WORLD.w - 12);
      a.ty = clamp(body.y, 12, WORLD.h - 12);
    } else if (body.type === 'step' && finite(body.dx) && finite(body.dy)) {
      a.tx = clamp(a.x + clamp(body.dx, -1, 1) * 48, 12, WORLD.w - 12);
      a.ty = clamp(a.y + clamp(body.dy, -1, 1) * 48, 12, WORLD.h - 12);
    } else {
      return false;
    }
    this.moves++;
    return true;
  }

  // Moves every avatar toward its target for dtS seconds; bots pick a new
  // target when they arrive. True when something moved.
  step(dtS) {
    let moved = false;
    for (const a of this.#avatars.values()) {
      if (a.bot && Math.hypot(a.tx - a.x, a.ty - a.y) < 1) {
        a.tx = 40 + this.#random() * (WORLD.w - 80);
        a.ty = 40 + this.#random() * (WORLD.h - 80);
      }
      const dx = a.tx - a.x;
      const dy = a.ty - a.y;
      const d = Math.hypot(dx, dy);
      if (d < 0.5) continue;
      const s = Math.min(d, SPEED * dtS);
      a.x += (dx / d) * s;
      a.y += (dy / d) * s;
      moved = true;
    }
    return moved;
  }

  // What clients see: [[id, x, y, color, bot], ...], positions rounded.
  snapshot() {
    return [...this.#avatars.values()].map((a) => [a.id, Math.round(a.x), Math.round(a.y), a.color, a.bot ? 1 : 0]);
  }
  get size() { return this.#avatars.size; }
}

/**
 * Starts the app server. opts: port (0: any), parleyHttp ("http://127.0.0.1:7700";
 * may be set later with setParley), apiKey, secret, tenant, bots.
 * Resolves with {port, world, setParley(url, wsUrl), stats, close()}.
 */
export async function startAppServer(opts) {
  const { apiKey, secret, tenant = 'demo', bots = 4, host = '127.0.0.1' } = opts;
  const world = new World({ bots });
  const stats = { events: 0, batches: 0, publishes: 0, publishFailures: 0, sends: 0 };
  let parleyHttp = opts.parleyHttp ?? null;
  let parleyWs = opts.parleyWs ?? null;

  async function api(path, body) {
    const res = await fetch(`${parleyHttp}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  }

  // The world's state, to everyone in it, ten times a second while it moves
  // (and once a second when still, so a quiet world still says who is there).
  let lastPublish = 0;
  let publishing = false;
  let dirty = true;
  const timer = setInterval(async () => {
    if (world.step(TICK_MS / 1000)) dirty = true;
    const now = Date.now();
    if (!parleyHttp || publishing || (!dirty && now - lastPublish < 1000)) return;
    publishing = true;
    dirty = false;
    lastPublish = now;
    try {
      await api('/v1/publish', { ch: 'world:main', body: { type: 'world', t: now, avatars: world.snapshot() } });
      stats.publishes++;
    } catch (e) {
      stats.publishFailures++;
      if (stats.publishFailures % 50 === 1) console.error(`app server: publish failed: ${e.message}`);
    } finally {
      publishing = false;
    }
  }, TICK_MS);

  // Forwarded events: a JSON array, in order per channel. Answered 200 once
  // applied, so Parley retries a batch we did not take.
  function onEvents(events) {
    stats.batches++;
    for (const ev of events) {
      stats.events++;
      if (ev.tenant !== tenant || ev.ch !== 'world:main') continue;
      if (ev.type === 'join') {
        world.join(ev.user);
        dirty = true;
        // The newcomer gets the whole world at once, before the next tick.
        api('/v1/send', { conn: ev.conn, body: { type: 'welcome', you: ev.user, size: WORLD, avatars: world.snapshot() } })
          .then(() => stats.sends++)
          .catch((e) => console.error(`app server: send failed: ${e.message}`));
      } else if (ev.type === 'leave') {
        world.leave(ev.user);
        dirty = true;
      } else if (ev.type === 'up') {
        if (world.request(ev.user, ev.body)) dirty = true;
      }
    }
  }

  function authorized(req) {
    const given = Buffer.from(req.headers.authorization ?? '');
    const want = Buffer.from(`Bearer ${apiKey}`);
    return given.length === want.length && timingSafeEqual(given, want);
  }

  async function serveFile(res, dir, rel) {
    const path = normalize(join(dir, rel));
    if (!path.startsWith(dir + '/')) return send(res, 404, 'text/plain', 'not found');
    try {
      const body = await readFile(path);
      send(res, 200, TYPES[extname(path)] ?? 'application/octet-stream', body);
    } catch {
      send(res, 404, 'text/plain', 'not found');
    }
  }

  function send(res, status, type, body) {
    res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    res.end(body);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'POST' && url.pathname === '/events') {
      if (!authorized(req)) return send(res, 401, 'text/plain', 'unauthorized');
      let size = 0;
      const chunks = [];
      req.on('data', (c) => {
        size += c.length;
        if (size > MAX_EVENT_BODY) req.destroy();
        else chunks.push(c);
      });
      req.on('end', () => {
        let events;
        try {
          events = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return send(res, 400, 'text/plain', 'not JSON');
        }
        if (!Array.isArray(events)) return send(res, 400, 'text/plain', 'not an array');
        onEvents(events);
        send(res, 200, 'application/json', '{}');
      });
      return;
    }
    if (req.method !== 'GET') return send(res, 405, 'text/plain', 'method not allowed');
    if (url.pathname === '/config.json') {
      return send(res, 200, 'application/json', JSON.stringify({ wsUrl: parleyWs, world: 'world:main', chat: 'chat:lobby', size: WORLD }));
    }
    if (url.pathname === '/token') {
      // A guest name: 1-24 of [a-z0-9-]. A real game would check a login here.
      const user = (url.searchParams.get('user') ?? '').toLowerCase();
      if (!/^[a-z0-9-]{1,24}$/.test(user) || user.startsWith('bot-')) return send(res, 400, 'text/plain', 'bad name');
      return send(res, 200, 'text/plain', mintToken({ secret, tenant, user }));
    }
    if (url.pathname === '/stats.json') {
      return send(res, 200, 'application/json', JSON.stringify({ ...stats, avatars: world.size, moves: world.moves }));
    }
    if (url.pathname.startsWith('/sdk/')) return serveFile(res, SDK_DIR, url.pathname.slice(5));
    return serveFile(res, PUBLIC_DIR, url.pathname === '/' ? 'index.html' : url.pathname.slice(1));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, resolve);
  });
  return {
    port: server.address().port,
    world,
    stats,
    setParley(http, ws) { parleyHttp = http; parleyWs = ws; },
    close() {
      clearInterval(timer);
      server.closeAllConnections?.();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
