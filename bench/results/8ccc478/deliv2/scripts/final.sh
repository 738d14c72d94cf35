#!/usr/bin/env bash
# final.sh BENCH NEW BASE OUT PEERS_DIR [RUNS]: issue 9 shapes and the issue-13 compares at 1x,
# the new server (main at the end of h-deliv's session) against main at its start (8ccc478),
# one after the other, RUNS (2) rounds. Each round:
#   room 200    compare chat --ns room --conns 200  --rate 200  : NEW with parley,bun,floor; BASE parley
#   room 2,000  compare chat --ns room --conns 2000 --rate 2000 : same
#   broadcast 1x, world 1x (as bench/worlds/compares.sh: 20 s, --threads 2): NEW parley,bun; BASE parley
# Every process at benchmark priority (bench/worlds/prio.sh). BENCH (and the parley-floor
# beside it) of 8ccc478 for every run.
set -u
BENCH=$(realpath "$1"); NEW=$(realpath "$2"); BASE=$(realpath "$3"); OUT=$4; PEERS=$(realpath "$5"); RUNS=${6:-2}
ROOT=$(cd "$(dirname "$0")" && git rev-parse --show-toplevel)
PRIO="$ROOT/bench/worlds/prio.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
log() { echo "== $(date -u +%H:%M:%S) $* load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
cmp() {  # cmp NAME BIN TARGETS SHAPE args...
  local name=$1 bin=$2 targets=$3 shape=$4; shift 4
  log "$name"
  "$PRIO" "$BENCH" compare "$shape" "$@" --targets "$targets" --parley-bin "$bin" --peers-dir "$PEERS" \
    --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  sed -n '/^compare /,$p' "$OUT/$name.txt" | grep -E "^ *(parley|bun|floor) " | tee -a "$OUT/sequence.log"
}
for r in $(seq 1 "$RUNS"); do
  cmp room200-new-$r "$NEW" parley,bun,floor chat --ns room --conns 200 --rate 200 --duration 15
  cmp room200-base-$r "$BASE" parley chat --ns room --conns 200 --rate 200 --duration 15
  cmp room2000-new-$r "$NEW" parley,bun,floor chat --ns room --conns 2000 --rate 2000 --duration 15
  cmp room2000-base-$r "$BASE" parley chat --ns room --conns 2000 --rate 2000 --duration 15
  cmp broadcast1x-new-$r "$NEW" parley,bun broadcast --load-x 1 --duration 20 --threads 2
  cmp broadcast1x-base-$r "$BASE" parley broadcast --load-x 1 --duration 20 --threads 2
  cmp world1x-new-$r "$NEW" parley,bun world --load-x 1 --duration 20 --threads 2
  cmp world1x-base-$r "$BASE" parley world --load-x 1 --duration 20 --threads 2
done
log end
