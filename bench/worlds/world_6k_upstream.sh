#!/bin/bash
# Issue 13: world-6k with upstream forwarding of join/leave/up to the example app
# server (examples/world/app_server.mjs, Node), measured beside the clients' traffic.
#   bench/worlds/world_6k_upstream.sh PARLEY_BIN BENCH_BIN OUT_DIR [extra parley-bench flags]
# Starts the app server, then a fresh Parley (embedded store) whose `world` namespace
# forwards join, leave and up to it; runs world-6k (6,000 avatars in 60 worlds of 100,
# state 10 Hz, chat 60 msg/s, churn 10/s) with every avatar also sending an `up` move
# request UP_HZ times a second (default 0.2); samples the app server's CPU
# (/proc/PID/stat utime+stime) and its counters (/stats.json: batches = forwarded
# requests, events) at the start and end of the load phase.
# NO_UPSTREAM=1: the same world-6k without forwarding and without `up` (the baseline
# for what forwarding costs Parley); files are then named world-6k-plain.*.
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
PARLEY=$(realpath "$1"); BENCH=$(realpath "$2"); OUT=$3; shift 3
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PORT=${PORT:-7983}; APP_PORT=${APP_PORT:-7984}; UP_HZ=${UP_HZ:-0.2}
NAME=world-6k-upstream
FORWARD="upstream = \"http://127.0.0.1:$APP_PORT/events\"
forward = [\"join\", \"leave\", \"up\"]"
if [ -n "${NO_UPSTREAM:-}" ]; then NAME=world-6k-plain; UP_HZ=0; FORWARD=""; fi
DURATION=${DURATION:-60}; RAMP=${RAMP:-10}
TMP=$(mktemp -d /tmp/world-6k-up.XXXXXX)
SECRET=demo-secret-change-me-0123456789; KEY=demo-api-key
cat > "$OUT/parley-$NAME.toml" <<EOT
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$TMP/data"
[tenants.demo]
secret = "$SECRET"
api_key = "$KEY"
max_connections = 50000
publish_per_sec = 20000
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
$FORWARD
EOT
node "$HERE/app_server_run.mjs" "$APP_PORT" "http://127.0.0.1:$PORT" "$KEY" "$SECRET" > "$TMP/app.out" 2> "$TMP/app.err" &
APP=$!
"$PARLEY" serve --config "$OUT/parley-$NAME.toml" > "$TMP/parley.log" 2>&1 &
PID=$!
trap 'kill $PID $APP 2>/dev/null; wait $PID $APP 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && curl -sf "http://127.0.0.1:$APP_PORT/stats.json" >/dev/null && break; sleep 0.1; done
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, clock ticks
TCK=$(getconf CLK_TCK)
sample() { echo "$1 t=$(date +%s.%N) app_cpu_ticks=$(cpu $APP) parley_cpu_ticks=$(cpu $PID) stats=$(curl -s "http://127.0.0.1:$APP_PORT/stats.json")"; }
echo "before: $(uptime)" > "$OUT/$NAME.uptime"
# The load phase starts after the ramp and 1 s of settling: sample there and at its end.
( sleep "$(echo "$RAMP + 1" | bc)"; sample start; sleep "$DURATION"; sample end ) > "$OUT/$NAME.samples" &
SAMPLER=$!
set +e
"$BENCH" world-6k --target "127.0.0.1:$PORT" --threads 2 --server-pid "$PID" --up-hz "$UP_HZ" \
  --duration "$DURATION" --ramp-up "$RAMP" --no-progress \
  --json "$OUT/$NAME.json" --html "$OUT/$NAME.html" "$@" | tee "$OUT/$NAME.txt"
rc=${PIPESTATUS[0]}
set -e
wait $SAMPLER
echo "after: $(uptime)" >> "$OUT/$NAME.uptime"
curl -s "http://127.0.0.1:$PORT/metrics" > "$OUT/$NAME.metrics.txt"
# The app server's load over the load phase, from the two samples.
python3 - "$OUT/$NAME.samples" "$TCK" <<'PY' | tee -a "$OUT/$NAME.txt"
import json, re, sys
rows = {}
for line in open(sys.argv[1]):
    name = line.split()[0]
    t = float(re.search(r"t=(\S+)", line).group(1))
    app = int(re.search(r"app_cpu_ticks=(\d+)", line).group(1))
    par = int(re.search(r"parley_cpu_ticks=(\d+)", line).group(1))
    st = json.loads(line.split("stats=", 1)[1])
    rows[name] = (t, app, par, st)
tck = float(sys.argv[2])
(t0, a0, p0, s0), (t1, a1, p1, s1) = rows["start"], rows["end"]
dt = t1 - t0
print(f"\napp server over the load phase ({dt:.1f} s):")
print(f"  forwarded requests/s {(s1['batches'] - s0['batches']) / dt:10.1f}")
print(f"  forwarded events/s   {(s1['events'] - s0['events']) / dt:10.1f}")
print(f"  events per request   {(s1['events'] - s0['events']) / max(1, s1['batches'] - s0['batches']):10.1f}")
print(f"  its publishes/s      {(s1['publishes'] - s0['publishes']) / dt:10.1f}  (world:main, POST /v1/publish)")
print(f"  its sends/s          {(s1['sends'] - s0['sends']) / dt:10.1f}  (POST /v1/send welcomes)")
print(f"  app server CPU       {(a1 - a0) / tck:10.2f} s  ({100 * (a1 - a0) / tck / dt:.1f} % of a core)")
print(f"  parley CPU           {(p1 - p0) / tck:10.2f} s  ({100 * (p1 - p0) / tck / dt:.1f} % of a core)")
PY
echo "exit $rc" >> "$OUT/$NAME.txt"
exit "$rc"
