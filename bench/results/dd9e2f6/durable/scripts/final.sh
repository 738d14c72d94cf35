#!/usr/bin/env bash
# final.sh BENCH NEW BASE OUT PEERS_DIR [RUNS]: issue 9's durable targets, NEW against
# BASE (main at the session's start, 8ccc478), at benchmark priority (bench/worlds/prio.sh:
# own autogroup at -15, nice -15; plain nice only orders tasks within one autogroup).
# Each of RUNS (2) rounds:
#   durable chat 200: compare chat --conns 200 --rate 200 --duration 15: NEW with parley,bun; BASE parley
# then chat-6k (scripts/chat6k.sh, 60 s after a 10 s connect ramp): NEW, then BASE.
set -u
BENCH=$(realpath "$1"); NEW=$(realpath "$2"); BASE=$(realpath "$3"); OUT=$4; PEERS=$(realpath "$5"); RUNS=${6:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE" && git rev-parse --show-toplevel)
PRIO="$ROOT/bench/worlds/prio.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
log() { echo "== $(date -u +%H:%M:%S) $* load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
chat() {  # chat NAME BIN TARGETS args...
  local name=$1 bin=$2 targets=$3; shift 3
  log "$name"
  "$PRIO" "$BENCH" compare chat "$@" --targets "$targets" --parley-bin "$bin" --peers-dir "$PEERS" \
    --duration 15 --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  sed -n '/^compare /,$p' "$OUT/$name.txt" | grep -E "^ *(parley|bun) " | tee -a "$OUT/sequence.log"
}
for r in $(seq 1 "$RUNS"); do
  chat durable-new-$r "$NEW" parley,bun --conns 200 --rate 200
  chat durable-base-$r "$BASE" parley --conns 200 --rate 200
done
for side in new base; do
  bin=$NEW; [ $side = base ] && bin=$BASE
  log "chat-6k-$side"
  BENCH=$BENCH REPO=$ROOT "$PRIO" bash "$HERE/chat6k.sh" "$bin" "$OUT/chat6k-$side" 60 > "$OUT/chat6k-$side.txt" 2>&1
  grep -E "^  (ack|delivery) |acked/s|server CPU|generator CPU|verdict|cores" "$OUT/chat6k-$side.txt" | tee -a "$OUT/sequence.log"
done
log end
