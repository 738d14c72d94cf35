#!/bin/bash
# Where Parley's CPU goes in the compare shapes (issue 13, item 5): Parley alone with
# the compare's config (room/world not durable, tick 20 ms), the preset's load from
# parley-bench, and `perf record` on the server for PERF_S seconds of the load phase.
#   bench/worlds/profile.sh PARLEY_BIN BENCH_BIN OUT_DIR broadcast|world|world-big [LOAD_X]
# (world-big: WAIT=22 for its 20 s connection ramp)
# Writes OUT_DIR/profile-SHAPE-Xx.{txt,report.txt} (flat self time by symbol, and by
# DSO: kernel vs Parley vs libc).
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
PARLEY=$(realpath "$1"); BENCH=$(realpath "$2"); OUT=$3; SHAPE=$4; X=${5:-1}
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PORT=${PORT:-7987}; PERF_S=${PERF_S:-10}; WAIT=${WAIT:-6}
TMP=$(mktemp -d /tmp/profile.XXXXXX)
cat > "$TMP/parley.toml" <<EOT
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$TMP/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
[tenants.demo.namespaces.big]
durable = false
tick_ms = 20
presence = true
aoi_cell = 50
EOT
"$PARLEY" serve --config "$TMP/parley.toml" > "$TMP/parley.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
name="profile-$SHAPE-${X}x"
"$BENCH" "$SHAPE" --load-x "$X" --target "127.0.0.1:$PORT" --threads 2 --duration $((PERF_S + 12)) \
  --server-pid "$PID" --no-progress > "$OUT/$name.txt" 2>&1 &
BP=$!
sleep "$WAIT"   # connections ramped and settled
perf record -F 499 -p "$PID" -o "$TMP/perf.data" -- sleep "$PERF_S" 2> /dev/null
# System calls per second of the server (5 s), beside the deliveries the bench counts.
EV=""
for sc in sendto sendmsg writev write recvfrom recvmsg read epoll_wait epoll_pwait epoll_ctl futex; do
  EV="$EV,syscalls:sys_enter_$sc"
done
perf stat -e "${EV#,}" -p "$PID" -o "$TMP/stat.txt" -- sleep 5 2> /dev/null || true
wait $BP || true
{
  echo "== by DSO"; perf report -i "$TMP/perf.data" --sort dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -15
  echo "== by symbol"; perf report -i "$TMP/perf.data" --sort dso,symbol --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60
  echo "== system calls in 5 s"; grep syscalls "$TMP/stat.txt"
} | sed 's/ *$//' > "$OUT/$name.report.txt"
cat "$OUT/$name.report.txt"
