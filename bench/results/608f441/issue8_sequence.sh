#!/usr/bin/env bash
# Issue 8's before/after: the previous record's server and the new one, interleaved
# in one sequence (same bench binary, same config), so noise hits both alike.
set -uo pipefail
B=$1; BASE=$2; NEW=$3; OUT=$4; DUR=${DUR:-30}; CHATDUR=${CHATDUR:-60}
mkdir -p "$OUT"
cfg=$OUT/parley.toml
cat > "$cfg" <<TOML
[server]
listen = "127.0.0.1:7960"
tcp_listen = "127.0.0.1:7961"
store = "embedded"
data_dir = "/tmp/pb8/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
max_connections = 50000
publish_per_sec = 20000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
TOML
for scen in broadcast world; do
  for who in base new; do
    bin=$BASE; [[ $who == new ]] && bin=$NEW
    echo "== $(date -u +%H:%M:%S) compare $scen $who load=$(cut -d' ' -f1 /proc/loadavg)"
    "$B" compare "$scen" --targets parley --duration "$DUR" --parley-bin "$bin" \
      --json "$OUT/compare-$scen-$who.json" > "$OUT/compare-$scen-$who.txt" 2>/dev/null
    tail -5 "$OUT/compare-$scen-$who.txt"
  done
done
for who in base new; do
  bin=$BASE; [[ $who == new ]] && bin=$NEW
  rm -rf /tmp/pb8/data; mkdir -p /tmp/pb8
  "$bin" serve --config "$cfg" > "$OUT/server-$who.log" 2>&1 &
  PID=$!
  sleep 2
  echo "== $(date -u +%H:%M:%S) chat-6k $who load=$(cut -d' ' -f1 /proc/loadavg)"
  "$B" chat-6k --duration "$CHATDUR" --threads 2 --target 127.0.0.1:7960 --server-pid $PID \
    --json "$OUT/chat-6k-$who.json" > "$OUT/chat-6k-$who.txt" 2>/dev/null
  curl -s 127.0.0.1:7960/metrics > "$OUT/chat-6k-$who.metrics.txt"
  kill -TERM $PID; wait $PID
  grep -E "ack|delivery|deliveries per|server CPU|RSS|audit" "$OUT/chat-6k-$who.txt" | head -12
done
