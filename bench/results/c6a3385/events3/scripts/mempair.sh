#!/usr/bin/env bash
# mempair.sh OUT ROUNDS RATE CONNS DUR "ENV_A" DIR_A "ENV_B" DIR_B [extra]: A and B alternately (order flips each
# round): each a fresh events_keep.sh run with `env ENV_X` in front of the server; smaps_rollup sampled every 0.5 s.
set -u
out=$1; rounds=$2; rate=$3; conns=$4; dur=$5; envA=$6; dirA=$7; envB=$8; dirB=$9; shift 9
mkdir -p $out; cd "${REPO:-/work/main}"
for r in $(seq $rounds); do
  if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
  for label in $order; do
    if [ $label = A ]; then e=$envA; d=$dirA; else e=$envB; d=$dirB; fi
    f=$out/$label-$r.txt
    env $e KEEP_LOG=$out/$label-$r.server.log PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$d/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
      nice -n -15 bash $(dirname "$0")/events_keep.sh hunt-20k --rate $rate --conns $conns --duration $dur --drain 10 "$@" > $f 2>&1 &
    bpid=$!
    sp=""
    for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $f 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
    ( while kill -0 $sp 2>/dev/null; do
        awk '/^Rss:/{r=$2} /^Anonymous:/{a=$2} END{if (r) printf "rss %d anon %d file %d\n", r, a, r-a}' /proc/$sp/smaps_rollup 2>/dev/null
        sleep 0.5; done > $out/$label-$r.mem ) &
    wait $bpid
    sleep 1
    echo "$label-$r ($e): $(grep -o 'acked [0-9]* ([0-9]*/s)' $f) $(grep 'group 0' $f | grep -o 'p50.*ms p99 [0-9.]* ms') | $(grep -o 'cpu [0-9.]* s over' $f) | $(grep -o 'peak [0-9.]* MiB' $f) | max anon $(sort -k4 -n $out/$label-$r.mem | tail -1 | awk '{printf "%.1f MiB (file %.1f)", $4/1024, $6/1024}') | stops $(grep -c 'Stopping writes' $out/$label-$r.server.log) | $(grep -o 'load average.*' $f | head -1)"
  done
done
