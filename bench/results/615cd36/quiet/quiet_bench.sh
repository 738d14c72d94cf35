#!/usr/bin/env bash
# Quiet-machine runs at the end of the session (2026-12-01, second session): main
# (the CI clone's build) against the session's start (START dir with parley,
# parley-bench, parley-floor built at 8ccc478).
# usage: bench/worlds/prio.sh bash quiet_bench.sh CLONE START OUT
# SKIP_EVENTS=1: issue 9's shapes only (no idle RSS, no event streams), as run at 746e6d6.
set -u
C=$1; S=$2; OUT=$3; mkdir -p "$OUT"
P=$C/build/src/server/parley; B=$C/build/tools/bench/parley-bench
cd "$C"
log() { echo "== $(date -u +%H:%M:%S) $1 load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
cmp() { # name bench-bin parley-bin args...
  local name=$1 bin=$2 pbin=$3; shift 3
  log "$name"
  nice -n -15 "$bin" compare "$@" --threads 2 --parley-bin "$pbin" --peers-dir "$C/bench" --no-progress \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  sed -n '/^compare /,$p' "$OUT/$name.txt"
}
[ -z "${SKIP_EVENTS:-}" ] && { log idle-rss; nice -n -15 bash "$C/bench/results/8ccc478/rss/idle_pair.sh" 5 start="$S/parley" new="$P" > "$OUT/idle-rss.txt" 2>&1; tail -3 "$OUT/idle-rss.txt"; }
for r in 1 2; do
  cmp room200-new-$r $B $P chat --ns room --conns 200 --rate 200 --targets parley,bun,floor --duration 15
  cmp room200-start-$r $S/parley-bench $S/parley chat --ns room --conns 200 --rate 200 --targets parley --duration 15
  cmp room2000-new-$r $B $P chat --ns room --conns 2000 --rate 2000 --targets parley,bun,floor --duration 15
  cmp room2000-start-$r $S/parley-bench $S/parley chat --ns room --conns 2000 --rate 2000 --targets parley --duration 15
  cmp durable200-new-$r $B $P chat --conns 200 --rate 200 --targets parley,bun --duration 15
  cmp durable200-start-$r $S/parley-bench $S/parley chat --conns 200 --rate 200 --targets parley --duration 15
done
for shape in broadcast world; do for x in 1 5; do
  cmp $shape-${x}x-new $B $P $shape --load-x $x --targets parley,bun --duration 15
done; done
if [ -z "${SKIP_EVENTS:-}" ]; then
log events-35k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --duration 45 --drain 15 --redis /usr/bin/redis-server > "$OUT/events-35k-redis.txt" 2>&1
log events-60k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --rate 60000 --conns 6 --duration 30 --drain 15 > "$OUT/events-60k.txt" 2>&1
log events-100k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --rate 100000 --conns 8 --no-ids --duration 30 --drain 15 > "$OUT/events-100k-noids.txt" 2>&1
fi
log chat-6k; BENCH=$B REPO=$C bash bench/results/8ccc478/durable/scripts/chat6k.sh $P "$OUT/chat6k" 60 > "$OUT/chat6k.log" 2>&1
log done
