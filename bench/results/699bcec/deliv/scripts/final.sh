#!/usr/bin/env bash
# final.sh BENCH NEW BASE OUT PEERS_DIR [RUNS]: issue 9/13 shapes, the new server against
# main at the session's start, interleaved, RUNS (2) rounds. Each round:
#   room 200    compare chat --ns room --conns 200  --rate 200  : NEW with parley,bun,floor; BASE parley
#   room 2,000  compare chat --ns room --conns 2000 --rate 2000 : same
#   durable     compare chat --conns 200 --rate 200             : NEW parley,bun; BASE parley
#   worlds      bench/worlds/compares.sh (broadcast, world at 1x and --load-x 5): NEW parley,bun; BASE parley
# Every process at benchmark priority (bench/worlds/prio.sh: own autogroup at -15, nice -15).
set -u
BENCH=$(realpath "$1"); NEW=$(realpath "$2"); BASE=$(realpath "$3"); OUT=$4; PEERS=$(realpath "$5"); RUNS=${6:-2}
ROOT=$(cd "$(dirname "$0")" && git rev-parse --show-toplevel)
PRIO="$ROOT/bench/worlds/prio.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
log() { echo "== $(date -u +%H:%M:%S) $* load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
chat() {  # chat NAME BIN TARGETS args...
  local name=$1 bin=$2 targets=$3; shift 3
  log "$name"
  "$PRIO" "$BENCH" compare chat "$@" --targets "$targets" --parley-bin "$bin" --peers-dir "$PEERS" \
    --duration 15 --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  sed -n '/^compare /,$p' "$OUT/$name.txt" | grep -E "^ *(parley|bun|floor) " | tee -a "$OUT/sequence.log"
}
for r in $(seq 1 "$RUNS"); do
  chat room200-new-$r "$NEW" parley,bun,floor --ns room --conns 200 --rate 200
  chat room200-base-$r "$BASE" parley --ns room --conns 200 --rate 200
  chat room2000-new-$r "$NEW" parley,bun,floor --ns room --conns 2000 --rate 2000
  chat room2000-base-$r "$BASE" parley --ns room --conns 2000 --rate 2000
  chat durable-new-$r "$NEW" parley,bun --conns 200 --rate 200
  chat durable-base-$r "$BASE" parley --conns 200 --rate 200
  log "worlds-new-$r"
  TARGETS=parley,bun bash "$ROOT/bench/worlds/compares.sh" "$BENCH" "$NEW" "$OUT/worlds-new-$r" --peers-dir "$PEERS" > "$OUT/worlds-new-$r.txt" 2>&1
  grep -E "^ *(parley|bun) " "$OUT/worlds-new-$r.txt" | tee -a "$OUT/sequence.log"
  log "worlds-base-$r"
  TARGETS=parley bash "$ROOT/bench/worlds/compares.sh" "$BENCH" "$BASE" "$OUT/worlds-base-$r" > "$OUT/worlds-base-$r.txt" 2>&1
  grep -E "^ *parley " "$OUT/worlds-base-$r.txt" | tee -a "$OUT/sequence.log"
done
log end
