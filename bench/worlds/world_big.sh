#!/bin/bash
# Issue 13, world-big: one world of 6,000 avatars with interest areas (aoi_cell 50,
# ~50 avatars per 3x3 cells), state at 10 Hz, tick 20 ms, not durable.
#   bench/worlds/world_big.sh PARLEY_BIN BENCH_BIN OUT_DIR [extra parley-bench flags]
# A fresh server on the embedded store; one generator process (6,000 connections is
# under the 20,000-file limit) with 2 worker threads. Writes OUT_DIR/world-big.{txt,json,html},
# world-big.metrics.txt (the server's /metrics after the run), parley.toml and uptime.
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
. "$(dirname "$0")/bench_tenant.sh"
PARLEY=$(realpath "$1"); BENCH=$(realpath "$2"); OUT=$3; shift 3
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PORT=${PORT:-7981}
TMP=$(mktemp -d /tmp/world-big.XXXXXX)
cat > "$OUT/parley.toml" <<EOF
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$TMP/data"
$(bench_tenant_toml)
[tenants.demo.namespaces.big]
durable = false
tick_ms = 20
presence = true
aoi_cell = 50
EOF
"$PARLEY" serve --config "$OUT/parley.toml" > "$TMP/parley.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
echo "before: $(uptime)" > "$OUT/world-big.uptime"
set +e
"$BENCH" world-big --target "127.0.0.1:$PORT" --threads 2 --server-pid "$PID" \
  --json "$OUT/world-big.json" --html "$OUT/world-big.html" --no-progress "$@" | tee "$OUT/world-big.txt"
rc=${PIPESTATUS[0]}
set -e
echo "after: $(uptime)" >> "$OUT/world-big.uptime"
curl -s "http://127.0.0.1:$PORT/metrics" > "$OUT/world-big.metrics.txt"
echo "exit $rc" >> "$OUT/world-big.txt"
exit "$rc"
