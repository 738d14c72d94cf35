// Parley's admin page: polls /admin/api/stats once a second with the key as a
// bearer header and turns the node's counters into rates and percentiles.
// Counters and histograms arrive cumulative; rates come from the difference
// between two polls, percentiles from the difference between now and the
// oldest poll inside the chosen window (as Prometheus' histogram_quantile does
// with rate()). Text from the server (tenant and channel names) is only ever
// set as textContent.
'use strict';

const POLL_MS = 1000;
const KEEP_S = 900;         // snapshots kept: the longest latency window
const CHART_S = 300;
const STAGES = [
  ['ack', 'ack (arrival → ack written)'],
  ['decode', 'decode'],
  ['queue_wait', 'queue wait (to the hub shard)'],
  ['append', 'store append'],
  ['fanout', 'delivery: commit → tick'],
  ['write', 'delivery: socket write'],
];

let key = null;
let timer = null;
let snaps = [];             // {t (s), s (stats)}, oldest first

const $ = (id) => document.getElementById(id);

function fmtNum(v, digits = 0) {
  if (v === null || v === undefined || !isFinite(v)) return '–';
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(2) + 'M';
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  return v.toFixed(digits);
}
function fmtSecs(s) {
  if (s === null || !isFinite(s)) return '–';
  if (s < 1e-3) return (s * 1e6).toFixed(0) + ' µs';
  if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + ' ms';
  return s.toFixed(2) + ' s';
}
function fmtBytes(b) {
  if (b < 1024) return b + ' B';
  if (b < 1 << 20) return (b / 1024).toFixed(1) + ' KiB';
  return (b / (1 << 20)).toFixed(1) + ' MiB';
}
function fmtUptime(s) {
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  return (d ? d + 'd ' : '') + (h ? h + 'h ' : '') + m + 'm ' + Math.floor(s % 60) + 's';
}

// The p-quantile of non-cumulative bucket counts, interpolating linearly inside
// the bucket as histogram_quantile does; null without observations.
function quantile(p, bounds, counts) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  const rank = p * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    if (seen + counts[i] >= rank && counts[i] > 0) {
      if (i === bounds.length) return bounds[bounds.length - 1];  // the +Inf bucket
      const lo = i === 0 ? 0 : bounds[i - 1], hi = bounds[i];
      return lo + (hi - lo) * ((rank - seen) / counts[i]);
    }
    seen += counts[i];
  }
  return bounds[bounds.length - 1];
}

function histDelta(now, then) {
  const buckets = now.buckets.map((c, i) => c - (then ? then.buckets[i] : 0));
  return { buckets, count: now.count - (then ? then.count : 0) };
}

// The snapshot nearest `seconds` ago (at least one poll back), or the oldest.
function snapAgo(seconds) {
  const last = snaps[snaps.length - 1];
  let pick = snaps[0];
  for (const s of snaps) {
    if (last.t - s.t >= seconds) pick = s; else break;
  }
  return pick === last && snaps.length > 1 ? snaps[snaps.length - 2] : pick;
}

function rate(now, then, get) {
  const dt = now.t - then.t;
  return dt > 0 ? (get(now.s) - get(then.s)) / dt : null;
}

function setText(id, text, cls) {
  const el = $(id);
  el.textContent = text;
  if (cls !== undefined) el.className = 'value ' + cls;
}

function row(tbody, cells) {
  const tr = document.createElement('tr');
  for (const [text, cls] of cells) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
}

function sumRejections(byCode) {
  return Object.values(byCode).reduce((a, b) => a + b, 0);
}

function render() {
  const now = snaps[snaps.length - 1];
  const s = now.s;
  const prev = snapAgo(5);  // rates over ~5 s: steadier than one poll
  const win = Number($('window').value);
  const then = snapAgo(win);

  const conns = s.tenants.reduce((a, t) => a + t.connections, 0);
  setText('connections', fmtNum(conns));
  $('sockets').textContent = `${fmtNum(s.node.sockets)} sockets · ${fmtNum(s.node.http_connections)} HTTP`;
  const msgs = (x) => x.tenants.reduce((a, t) => a + t.messages, 0);
  setText('msgs-per-s', fmtNum(rate(now, prev, msgs), 1));
  $('msgs-total').textContent = `${fmtNum(msgs(s))} acknowledged`;
  setText('deliveries-per-s', fmtNum(rate(now, prev, (x) => x.totals.deliveries), 1));
  $('frames-per-s').textContent =
      `frames in ${fmtNum(rate(now, prev, (x) => x.totals.frames_in), 1)}/s · out ${fmtNum(rate(now, prev, (x) => x.totals.frames_out), 1)}/s`;
  const rej = rate(now, prev, (x) => sumRejections(x.rejections));
  setText('rejections-per-s', fmtNum(rej, 1), rej > 0 ? 'warn' : '');
  $('slow-consumers').textContent = `${fmtNum(s.totals.slow_consumer_disconnects)} slow-consumer cuts`;

  const ackNow = histDelta(s.latency.ack, then === now ? null : then.s.latency.ack);
  setText('ack-p50', fmtSecs(quantile(0.5, s.latency.bounds, ackNow.buckets)));
  $('ack-p99').textContent = `p99 ${fmtSecs(quantile(0.99, s.latency.bounds, ackNow.buckets))}`;

  const st = s.store;
  if (st.writable === false) {
    setText('store-state', 'refusing writes', 'bad');
    const since = st.refusing_since_ms ? ' since ' + new Date(st.refusing_since_ms).toLocaleTimeString() : '';
    $('store-detail').textContent = `${st.reason || 'unknown reason'}${since} · ${st.kind}`;
  } else {
    setText('store-state', st.writable === true ? 'healthy' : 'running', 'ok');
    $('store-detail').textContent = `${st.kind} · ${fmtNum(st.pending || 0)} pending` +
        (st.loss_accepted ? ' · started with data loss accepted' : '') +
        (st.unreadable_reads ? ` · ${st.unreadable_reads} unreadable reads` : '');
  }

  // Tenants.
  const tb = $('tenants').querySelector('tbody');
  tb.replaceChildren();
  for (const t of s.tenants) {
    const old = then.s.tenants.find((x) => x.id === t.id);
    const tp = prev.s.tenants.find((x) => x.id === t.id);
    const dt = now.t - prev.t;
    const perS = tp && dt > 0 ? (t.messages - tp.messages) / dt : null;
    const codes = Object.entries(t.rejections)
        .map(([c, n]) => [c, n - (old ? old.rejections[c] || 0 : 0)])
        .filter(([, n]) => n > 0).map(([c, n]) => `${c} ${n}`).join(', ');
    row(tb, [[t.id], [`${fmtNum(t.connections)} / ${fmtNum(t.max_connections)}`, 'num'],
             [fmtNum(perS, 1), 'num'], [fmtNum(t.messages), 'num'], [codes || 'none', 'wrap']]);
  }

  // Busiest channels (the server ranks them by what they published since its previous answer).
  const cb = $('channels').querySelector('tbody');
  cb.replaceChildren();
  for (const c of s.channels.busiest) {
    const perS = s.channels.interval_s > 0 ? c.published / s.channels.interval_s : null;
    row(cb, [[c.tenant], [c.ch], [fmtNum(perS, 1), 'num'], [fmtNum(c.members), 'num'],
             [fmtNum(c.last_seq), 'num']]);
  }
  if (!s.channels.busiest.length) row(cb, [['no channels loaded'], [''], [''], [''], ['']]);

  // Latency over the window.
  const lb = $('latency').querySelector('tbody');
  lb.replaceChildren();
  for (const [name, label] of STAGES) {
    const h = name === 'ack' ? s.latency.ack : s.latency.stages[name];
    const old = then === now ? null : (name === 'ack' ? then.s.latency.ack : then.s.latency.stages[name]);
    const d = histDelta(h, old);
    const q = (p) => fmtSecs(quantile(p, s.latency.bounds, d.buckets));
    row(lb, [[label], [q(0.5), 'num'], [q(0.95), 'num'], [q(0.99), 'num'], [fmtNum(d.count), 'num']]);
  }
  const span = now.t - then.t;
  $('latency-note').textContent = span < win - 1
      ? `Window so far: ${Math.round(span)} s (since this page started watching).`
      : `Window: ${Math.round(span)} s.`;

  // Rejections by code over the window.
  const rb = $('rejections').querySelector('tbody');
  rb.replaceChildren();
  for (const [code, n] of Object.entries(s.rejections)) {
    const d = n - (then.s.rejections[code] || 0);
    row(rb, [[code], [fmtNum(d), 'num'], [fmtNum(span > 0 ? d / span : null, 2), 'num']]);
  }

  // Fan-out bytes by namespace and encoding: rate over ~5 s, bytes per delivery
  // since start (what an encoding or state deltas save shows here), and the
  // bytes the sockets carried (framing and replies too; tenant/- holds replies).
  const trb = $('traffic').querySelector('tbody');
  trb.replaceChildren();
  for (const t of s.traffic || []) {
    const tp = (prev.s.traffic || []).find((x) => x.namespace === t.namespace && x.encoding === t.encoding);
    const dt = now.t - prev.t;
    const perS = tp && dt > 0 ? (t.bytes - tp.bytes) / dt : null;
    row(trb, [[t.namespace], [t.encoding], [perS === null ? '–' : fmtBytes(Math.round(perS)), 'num'],
              [fmtNum(t.deliveries > 0 ? t.bytes / t.deliveries : null, 1), 'num'], [fmtBytes(t.bytes), 'num'],
              [fmtBytes(t.wire_bytes || 0), 'num']]);
  }
  if (!(s.traffic || []).length) row(trb, [['nothing sent yet'], [''], [''], [''], [''], ['']]);

  // Open connections by encoding and the top talkers: per connection only
  // here (never a Prometheus label); rates since the server's previous answer.
  const open = s.connections || { by_encoding: [], top: [] };
  const cfb = $('conn-forms').querySelector('tbody');
  cfb.replaceChildren();
  for (const f of open.by_encoding.filter((x) => x.connections > 0)) {
    row(cfb, [[f.encoding], [fmtNum(f.connections), 'num'], [fmtBytes(Math.round(f.bytes_out_per_s)), 'num'],
              [fmtBytes(f.bytes_out), 'num']]);
  }
  if (!open.by_encoding.some((x) => x.connections > 0)) row(cfb, [['no open connections'], [''], [''], ['']]);
  const tkb = $('talkers').querySelector('tbody');
  tkb.replaceChildren();
  for (const c of open.top) {
    row(tkb, [[String(c.conn)], [c.tenant], [c.user], [c.encoding],
              [fmtBytes(Math.round(c.bytes_out_per_s)), 'num'], [fmtBytes(c.bytes_out), 'num']]);
  }
  if (!open.top.length) row(tkb, [['no open connections'], [''], [''], [''], [''], ['']]);

  // Queues.
  const qb = $('queues').querySelector('tbody');
  qb.replaceChildren();
  const q = s.queues;
  row(qb, [['appends in flight (hub shards)'], [fmtNum(q.append_in_flight), 'num']]);
  row(qb, [['appends queued in the store'], [fmtNum(q.store_pending), 'num']]);
  row(qb, [['bytes in connection write queues'], [fmtBytes(q.session_queue_bytes), 'num']]);
  row(qb, [['bytes held before hello'], [fmtBytes(q.preauth_bytes), 'num']]);
  row(qb, [['upstream events queued'], [fmtNum(q.upstream_queued), 'num']]);
  row(qb, [['upstream events dropped (total)'], [fmtNum(q.upstream_dropped), 'num']]);
  row(qb, [['channels loaded'], [fmtNum(s.node.channels), 'num']]);

  $('node').textContent = `parley ${s.node.version} · ${s.node.threads} loops · up ${fmtUptime(s.node.uptime_s)}` +
      (s.node.draining ? ' · DRAINING' : '');
  drawChart(msgs);
}

function drawChart(msgs) {
  const canvas = $('chart');
  const ctx = canvas.getContext('2d');
  const W = canvas.width, H = canvas.height, pad = 28;
  ctx.clearRect(0, 0, W, H);
  const last = snaps[snaps.length - 1].t;
  const pts = [];
  for (let i = 1; i < snaps.length; i++) {
    const a = snaps[i - 1], b = snaps[i];
    if (last - b.t > CHART_S || b.t <= a.t) continue;
    pts.push({ t: b.t, r: (msgs(b.s) - msgs(a.s)) / (b.t - a.t),
               c: b.s.tenants.reduce((x, t) => x + t.connections, 0) });
  }
  const maxR = Math.max(1, ...pts.map((p) => p.r)), maxC = Math.max(1, ...pts.map((p) => p.c));
  // The x axis spans what has been watched, from one minute up to five.
  const span = Math.min(CHART_S, Math.max(60, pts.length ? last - pts[0].t : 0));
  const x = (t) => pad + (W - 2 * pad) * (1 - (last - t) / span);
  ctx.strokeStyle = '#26313d';
  ctx.beginPath(); ctx.moveTo(pad, H - pad); ctx.lineTo(W - pad, H - pad); ctx.stroke();
  const line = (get, max, color) => {
    ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.beginPath();
    pts.forEach((p, i) => {
      const y = H - pad - (H - 2 * pad) * (get(p) / max);
      if (i === 0) ctx.moveTo(x(p.t), y); else ctx.lineTo(x(p.t), y);
    });
    ctx.stroke();
  };
  line((p) => p.r, maxR, '#4fb3ff');
  line((p) => p.c, maxC, '#3fb950');
  ctx.fillStyle = '#8b98a5'; ctx.font = '12px system-ui, sans-serif';
  ctx.fillText(`msgs/s (max ${fmtNum(maxR, 1)})`, pad, 16);
  ctx.fillStyle = '#3fb950';
  ctx.fillText(`connections (max ${fmtNum(maxC)})`, pad + 180, 16);
  ctx.fillStyle = '#8b98a5';
  ctx.fillText(span >= CHART_S ? '-5 min' : `-${Math.round(span)} s`, pad, H - 8);
  ctx.fillText('now', W - pad - 20, H - 8);
}

async function poll() {
  try {
    const r = await fetch('/admin/api/stats', {
      headers: { Authorization: 'Bearer ' + key }, cache: 'no-store', credentials: 'omit',
    });
    if (r.status === 401) return stop('The key was refused.');
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const s = await r.json();
    const t = performance.now() / 1000;
    snaps.push({ t, s });
    while (snaps.length > 2 && t - snaps[0].t > KEEP_S) snaps.shift();
    render();
    await pollSanctions();
    $('status').textContent = 'live · updated ' + new Date().toLocaleTimeString();
    $('status').className = 'ok';
  } catch (e) {
    $('status').textContent = 'cannot reach the node (' + e.message + '); retrying';
    $('status').className = 'bad';
  }
  timer = setTimeout(poll, POLL_MS);
}

// The moderation panel (PROTOCOL.md "Moderation: mute, kick, ban"): the
// sanctions in force are read with each poll; the form posts one action.
async function adminFetch(path, init = {}) {
  const r = await fetch(path, {
    ...init, cache: 'no-store', credentials: 'omit',
    headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
  });
  let body = null;
  try { body = await r.json(); } catch { body = null; }
  return { status: r.status, body };
}

function fmtLeft(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return s + ' s';
  if (s < 7200) return Math.round(s / 60) + ' min';
  if (s < 172800) return Math.round(s / 3600) + ' h';
  return Math.round(s / 86400) + ' d';
}

async function pollSanctions() {
  const r = await adminFetch('/admin/api/moderation');
  if (r.status !== 200 || !r.body) return;
  const tb = $('sanctions').querySelector('tbody');
  tb.replaceChildren();
  const all = [...r.body.mutes.map((x) => ['mute', x]), ...r.body.bans.map((x) => ['ban', x])];
  for (const [kind, x] of all) {
    row(tb, [[kind], [x.tenant], [x.user], [x.ch || '(whole tenant)'], [fmtLeft(x.until - Date.now()), 'num'], ['']]);
    const lift = document.createElement('button');
    lift.textContent = 'lift';
    lift.addEventListener('click', () => moderate({ tenant: x.tenant, action: kind, user: x.user,
                                                    ...(x.ch ? { ch: x.ch } : {}), for_ms: 0 }));
    tb.lastChild.lastChild.appendChild(lift);
  }
  if (!all.length) row(tb, [['none'], [''], [''], [''], [''], ['']]);
}

async function moderate(req) {
  const r = await adminFetch('/admin/api/moderation', { method: 'POST', body: JSON.stringify(req) });
  const out = $('mod-result');
  if (r.status === 200) {
    const parts = [];
    if (r.body.until !== undefined) parts.push(r.body.until ? 'until ' + new Date(r.body.until).toLocaleString() : 'lifted');
    if (r.body.kicked !== undefined) parts.push(`${r.body.kicked} connection(s) of this node removed`);
    out.textContent = `${req.action} ${req.user}: ${parts.join(', ')}`;
    out.className = 'ok';
  } else {
    out.textContent = `${req.action} ${req.user}: ${r.body ? r.body.code + ': ' + r.body.msg : 'HTTP ' + r.status}`;
    out.className = 'bad';
  }
  await pollSanctions();
}

function stop(message) {
  clearTimeout(timer);
  key = null;
  snaps = [];
  $('dash').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message;
  $('login-error').hidden = false;
  $('status').textContent = 'not connected';
  $('status').className = 'muted';
}

document.addEventListener('DOMContentLoaded', () => {
  $('login').addEventListener('submit', (ev) => {
    ev.preventDefault();
    key = $('key').value;
    $('key').value = '';
    $('login').hidden = true;
    $('login-error').hidden = true;
    $('dash').hidden = false;
    poll();
  });
  $('window').addEventListener('change', () => { if (snaps.length) render(); });
  $('mod-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const req = { tenant: $('mod-tenant').value.trim(), action: $('mod-action').value, user: $('mod-user').value.trim() };
    const ch = $('mod-ch').value.trim();
    if (ch) req.ch = ch;
    if (req.action !== 'kick') req.for_ms = Math.round(Number($('mod-for').value) * 1000);
    const reason = $('mod-reason').value;
    if (reason && req.action !== 'mute') req.reason = reason;
    moderate(req);
  });
});
