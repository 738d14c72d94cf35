#!/usr/bin/env bash
# final_chat.sh BENCH NEW BASE OUT PEERS_DIR [RUNS]: issue 9's durable target only
# (`compare chat`, durable, 200 connections, 200 msg/s, channels of 20, 15 s), NEW and
# BASE (main at the start of this work) each with parley,bun, alternating, RUNS (2)
# rounds, at benchmark priority (bench/worlds/prio.sh). ../../8ccc478/durable/scripts/final.sh
# without its chat-6k runs and with Bun beside BASE too (each side's own Bun ratio).
set -u
BENCH=$(realpath "$1"); NEW=$(realpath "$2"); BASE=$(realpath "$3"); OUT=$4; PEERS=$(realpath "$5"); RUNS=${6:-2}
ROOT=$(cd "$(dirname "$0")" && git rev-parse --show-toplevel)
PRIO="$ROOT/bench/worlds/prio.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
log() { echo "== $(date -u +%H:%M:%S) $* load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
chat() {  # chat NAME BIN
  local name=$1 bin=$2
  log "$name"
  "$PRIO" "$BENCH" compare chat --conns 200 --rate 200 --targets parley,bun --parley-bin "$bin" \
    --peers-dir "$PEERS" --duration 15 --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  sed -n '/^compare /,$p' "$OUT/$name.txt" | grep -E "^ *(parley|bun) " | tee -a "$OUT/sequence.log"
}
for r in $(seq 1 "$RUNS"); do
  chat durable-new-$r "$NEW"
  chat durable-base-$r "$BASE"
done
log end
