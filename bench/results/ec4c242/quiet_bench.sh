#!/usr/bin/env bash
# Quiet-machine runs at the end of the session, from the CI clone's build (= main).
# usage: quiet_bench.sh CLONE OUT
set -u
C=$1; OUT=$2; mkdir -p "$OUT"
P=$C/build/src/server/parley; B=$C/build/tools/bench/parley-bench
cd "$C"
log() { echo "== $(date -u +%H:%M:%S) $1 load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
log store-path; SECS=45 nice -n -15 bash bench/store_path.sh $P $B "$OUT/store-path" > "$OUT/store-path.out" 2>&1
log events-35k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --duration 45 --drain 15 --redis /usr/bin/redis-server > "$OUT/events-35k-redis.txt" 2>&1
log events-60k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --rate 60000 --conns 6 --duration 30 --drain 15 > "$OUT/events-60k.txt" 2>&1
log events-100k; PARLEY_BIN=$P PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k --rate 100000 --conns 8 --no-ids --duration 30 --drain 15 > "$OUT/events-100k-noids.txt" 2>&1
log persister; SECS=40 nice -n -15 bash bench/persister_run.sh $P $B "$OUT/persister" > "$OUT/persister.out" 2>&1
log scaleup; SECS=100 WARM=20 nice -n -15 bash bench/scaleup.sh $P $B "$OUT/scaleup" > "$OUT/scaleup.out" 2>&1
log done
