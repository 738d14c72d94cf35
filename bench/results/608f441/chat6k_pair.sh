#!/usr/bin/env bash
set -uo pipefail
B=$1; BASE=$2; NEW=$3; OUT=$4; CHATDUR=${CHATDUR:-60}
cfg=$OUT/parley.toml
for who in new2 base2; do
  bin=$BASE; [[ $who == new2 ]] && bin=$NEW
  rm -rf /tmp/pb8/data; mkdir -p /tmp/pb8
  "$bin" serve --config "$cfg" > "$OUT/server-$who.log" 2>&1 &
  PID=$!
  sleep 2
  echo "== $(date -u +%H:%M:%S) chat-6k $who load=$(cut -d' ' -f1 /proc/loadavg)"
  "$B" chat-6k --duration "$CHATDUR" --threads 2 --target 127.0.0.1:7960 --server-pid $PID \
    --json "$OUT/chat-6k-$who.json" > "$OUT/chat-6k-$who.txt" 2>/dev/null
  curl -s 127.0.0.1:7960/metrics > "$OUT/chat-6k-$who.metrics.txt"
  kill -TERM $PID; wait $PID
  grep -E "ack |delivery |deliveries/server|server CPU|RSS|own CPU|generator|audit:" "$OUT/chat-6k-$who.txt" | head -12
done
