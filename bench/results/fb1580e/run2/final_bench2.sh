#!/usr/bin/env bash
set -uo pipefail
B=$1; NEW=$2; BASE=$3; OUT=$4
mkdir -p "$OUT"
run() { local name=$1; shift
  echo "== $(date -u +%H:%M:%S) $name load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"
  "$B" "$@" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  grep -E "^ *(parley|bun|node-ws|floor) |behind" "$OUT/$name.txt" | head -12 | tee -a "$OUT/sequence.log"; }
run compare-chat-room-200 compare chat --ns room --conns 200 --rate 200 --duration 15 --targets parley,bun,floor --parley-bin "$NEW"
run compare-chat-room-2000 compare chat --ns room --conns 2000 --rate 2000 --duration 15 --targets parley,bun,floor --parley-bin "$NEW"
run compare-chat-200 compare chat --conns 200 --rate 200 --duration 15 --targets parley,bun --parley-bin "$NEW"
run compare-broadcast-base compare broadcast --duration 20 --targets parley --parley-bin "$BASE"
run compare-broadcast-new compare broadcast --duration 20 --targets parley --parley-bin "$NEW"
