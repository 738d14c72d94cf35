#!/bin/bash
# Issue 13, the way back: an app server broadcasting into a world of MEMBERS (default 20)
# and messaging users, over one persistent TCP connection (api_key hello) and
# over HTTP keep-alive (one message per request, and batched bodies).
#   bench/worlds/way_back.sh PARLEY_BIN OUT_DIR
# A fresh Parley per mode (embedded store; namespace `world` not durable, tick 20 ms,
# publish limits off), then bench/worlds/way_back.mjs for DURATION seconds (default 10).
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
. "$(dirname "$0")/bench_tenant.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PARLEY=$(realpath "$1"); OUT=$2
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PORT=${PORT:-7985}; TCP=${TCP:-7986}; DURATION=${DURATION:-10}; MEMBERS=${MEMBERS:-20}
MODES=${MODES:-"socket:64 socket:512 http:1 http:4 http-batch:4 http-send:4 http-send-batch:4"}
TMP=$(mktemp -d /tmp/way-back.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cat > "$OUT/parley-wayback.toml" <<EOT
[server]
listen = "127.0.0.1:$PORT"
tcp_listen = "127.0.0.1:$TCP"
store = "embedded"
data_dir = "$TMP/data"
$(bench_tenant_toml)
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
EOT
echo "before: $(uptime)" > "$OUT/way-back.uptime"
: > "$OUT/way-back.txt"
for m in $MODES; do
  mode=${m%%:*}; w=${m#*:}
  rm -rf "$TMP/data"
  "$PARLEY" serve --config "$OUT/parley-wayback.toml" > "$TMP/parley.log" 2>&1 &
  PID=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  node "$HERE/way_back.mjs" --mode "$mode" --window "$w" --conns "$w" --members "$MEMBERS" \
    --http "127.0.0.1:$PORT" --tcp "127.0.0.1:$TCP" --server-pid "$PID" --duration "$DURATION" \
    --json "$OUT/way-back-$mode-$w.json" ${BATCH:+--batch $BATCH} | tee -a "$OUT/way-back.txt"
  kill $PID; wait $PID 2>/dev/null || true
done
echo "after: $(uptime)" >> "$OUT/way-back.uptime"
