#!/usr/bin/env bash
# final.sh START_DIR NEW_DIR OUT: issue 12's event figures, main at the helper's start
# (START_DIR/parley, START_DIR/parley-bench) against the new main (NEW_DIR/parley), in one
# script, the same parley-bench (the start's) driving both; the events part of
# bench/results/2c3e5b3/quiet/quiet_bench.sh: hunt-20k at 35,000/s for 45 s with Redis Streams
# beside, 60,000/s for 30 s (ROUNDS rounds, order flipped each round), 100,000/s without ids
# for 30 s (ROUNDS rounds); every process at nice -15; run from a checkout (bench/events.sh).
set -u
start=$1; new=$2; out=$3; rounds=${ROUNDS:-2}
mkdir -p $out
B=$start/parley-bench
log() { echo "$(date -u +%H:%M:%S) $* | $(uptime | sed 's/.*load/load/')" | tee -a $out/sequence.log; }
run() {  # label dir args...
  local label=$1 dir=$2; shift 2
  log "$label"
  PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$dir/parley PARLEY_BENCH_BIN=$B nice -n -15 bash bench/events.sh hunt-20k "$@" > $out/$label.txt 2>&1
  echo "  $(grep -o 'acked [0-9]* ([0-9]*/s)' $out/$label.txt) $(grep 'group 0' $out/$label.txt | grep -o 'p50.*ms p99 [0-9.]* ms') | $(grep -o 'server: cpu.*' $out/$label.txt) | $(grep -o 'idle rss [0-9]* KiB' $out/$label.txt) | $(grep -c 'audit clean' $out/$label.txt) clean" | tee -a $out/sequence.log
}
run events-35k-redis-start $start --duration 45 --drain 15 --redis /usr/bin/redis-server
run events-35k-redis-new $new --duration 45 --drain 15 --redis /usr/bin/redis-server
for r in $(seq $rounds); do
  if [ $((r % 2)) -eq 1 ]; then order="start new"; else order="new start"; fi
  for w in $order; do d=$start; [ $w = new ] && d=$new
    run events-60k-$w-$r $d --rate 60000 --conns 6 --duration 30 --drain 15
  done
  for w in $order; do d=$start; [ $w = new ] && d=$new
    run events-100k-noids-$w-$r $d --rate 100000 --conns 8 --no-ids --duration 30 --drain 15
  done
done
log done
