// The world page: Parley's JavaScript SDK (served by the app server as /sdk/)
// joins `world:main` and `chat:lobby`. The app server owns the world: this
// page only asks to move (`up`) and draws what the app server publishes.
import { ParleyClient } from '/sdk/index.js';

const canvas = document.getElementById('world');
const ctx = canvas.getContext('2d');
const statusEl = document.getElementById('status');
const chatEl = document.getElementById('chat');

const params = new URLSearchParams(location.search);
const name = (params.get('name') || localStorage.getItem('parley-world-name') ||
              `guest-${Math.random().toString(16).slice(2, 6)}`).toLowerCase();
localStorage.setItem('parley-world-name', name);
document.getElementById('you').textContent = `you are ${name}`;

// What the page knows, exposed for the test (tests/world) and the curious.
const state = {
  you: null,            // the user id the app server's welcome named
  avatars: new Map(),   // id -> {x, y, fromX, fromY, at, color, bot}
  worldUpdates: 0,      // world frames received
  chat: [],             // [from, text]
  frames: 0,            // canvas frames drawn
};
window.worldDemo = {
  get you() { return state.you; },
  get updates() { return state.worldUpdates; },
  get frames() { return state.frames; },
  get chat() { return state.chat.slice(); },
  avatars() {
    return [...state.avatars.entries()].map(([id, a]) => ({ id, x: a.x, y: a.y, bot: a.bot }));
  },
};

const config = await (await fetch('/config.json')).json();
const client = new ParleyClient({
  url: config.wsUrl,
  // Called again before every reconnect, so a token never goes stale.
  token: () => fetch(`/token?user=${encodeURIComponent(name)}`).then((r) => {
    if (!r.ok) throw new Error(`token: HTTP ${r.status}`);
    return r.text();
  }),
});
client.on('open', () => { statusEl.textContent = 'live'; statusEl.className = 'live'; });
client.on('disconnect', (d) => {
  statusEl.className = '';
  statusEl.textContent = d.willReconnect ? `reconnecting in ${Math.round(d.delayMs)} ms` : 'disconnected';
});

function applyWorld(avatars) {
  const now = performance.now();
  const seen = new Set();
  for (const [id, x, y, color, bot] of avatars) {
    seen.add(id);
    const a = state.avatars.get(id);
    if (!a) {
      state.avatars.set(id, { x, y, fromX: x, fromY: y, at: now, color, bot: !!bot });
      continue;
    }
    // Drawn moving from where it is shown now to the new place over one tick.
    const shown = position(a, now);
    Object.assign(a, { fromX: shown.x, fromY: shown.y, x, y, at: now, color });
  }
  for (const id of [...state.avatars.keys()]) if (!seen.has(id)) state.avatars.delete(id);
  state.worldUpdates++;
}

// The app server's welcome (POST /v1/send to this connection) has the whole world.
client.on('direct', (d) => {
  if (d.body?.type !== 'welcome') return;
  state.you = d.body.you;
  applyWorld(d.body.avatars);
});

const world = client.channel(config.world);
world.on('msg', (m) => { if (m.body?.type === 'world') applyWorld(m.body.avatars); });
const chat = client.channel(config.chat);
chat.on('msg', (m) => addChat(m.from, String(m.body?.text ?? '')));

await Promise.all([world.join(), chat.join()]);

function addChat(from, text) {
  state.chat.push([from, text]);
  const li = document.createElement('li');
  const b = document.createElement('b');
  b.textContent = `${from}: `;
  li.append(b, text);
  chatEl.append(li);
  while (chatEl.children.length > 200) chatEl.firstChild.remove();
  chatEl.scrollTop = chatEl.scrollHeight;
}

document.getElementById('say').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = document.getElementById('line');
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  chat.publish({ text }).catch((err) => addChat('(not sent)', err.message));
});

// Moving: ask the app server; it decides (and may refuse).
function worldPoint(ev) {
  const r = canvas.getBoundingClientRect();
  return { x: ((ev.clientX - r.left) / r.width) * canvas.width, y: ((ev.clientY - r.top) / r.height) * canvas.height };
}
canvas.addEventListener('click', (ev) => {
  const p = worldPoint(ev);
  world.up({ type: 'move', x: Math.round(p.x), y: Math.round(p.y) });
});
const KEYS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
window.addEventListener('keydown', (ev) => {
  if (document.activeElement?.id === 'line') return;
  const k = KEYS[ev.key];
  if (!k) return;
  ev.preventDefault();
  world.up({ type: 'step', dx: k[0], dy: k[1] });
});

const TICK_MS = 100;
function position(a, now) {
  const f = Math.min(1, (now - a.at) / TICK_MS);
  return { x: a.fromX + (a.x - a.fromX) * f, y: a.fromY + (a.y - a.fromY) * f };
}

function draw(now) {
  state.frames++;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = '#1c222a';
  ctx.lineWidth = 1;
  for (let x = 0; x <= canvas.width; x += 48) { ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, canvas.height); ctx.stroke(); }
  for (let y = 0; y <= canvas.height; y += 48) { ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(canvas.width, y); ctx.stroke(); }
  ctx.font = '12px system-ui, sans-serif';
  ctx.textAlign = 'center';
  for (const [id, a] of state.avatars) {
    const p = position(a, now);
    const me = id === state.you;
    ctx.beginPath();
    ctx.arc(p.x, p.y, me ? 13 : 10, 0, Math.PI * 2);
    ctx.fillStyle = a.color;
    ctx.fill();
    if (me) { ctx.lineWidth = 3; ctx.strokeStyle = '#ffffff'; ctx.stroke(); }
    ctx.fillStyle = a.bot ? '#8a93a0' : '#e8e8e8';
    ctx.fillText(me ? `${id} (you)` : id, p.x, p.y - 18);
  }
  document.getElementById('counts').textContent =
    `${state.avatars.size} avatars, ${state.worldUpdates} world updates received`;
  requestAnimationFrame(draw);
}
requestAnimationFrame(draw);
