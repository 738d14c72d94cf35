#!/usr/bin/env bash
# envpair.sh OUT ROUNDS RATE CONNS DUR "ENV_A" "ENV_B" DIR [extra]: one binary (DIR/parley), A and B environments
# alternately (order flips each round); per run: bench output, server log, per-thread CPU, smaps_rollup every 0.5 s,
# perf stat (futex, context switches, task-clock) over 8 s from 6 s in.
set -u
out=$1; rounds=$2; rate=$3; conns=$4; dur=$5; envA=$6; envB=$7; d=$8; shift 8
mkdir -p $out; here=$(cd "$(dirname "$0")" && pwd); cd "${REPO:-/work/main}"
for r in $(seq $rounds); do
  if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
  for label in $order; do
    if [ $label = A ]; then e=$envA; else e=$envB; fi
    f=$out/$label-$r.txt
    env $e KEEP_LOG=$out/$label-$r.server.log PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$d/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
      nice -n -15 bash $here/events_keep.sh hunt-20k --rate $rate --conns $conns --duration $dur --drain 10 "$@" > $f 2>&1 &
    bpid=$!
    sp=""
    for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $f 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
    bash $here/threads.sh $sp $out/$label-$r.threads &
    ( while kill -0 $sp 2>/dev/null; do
        awk '/^Rss:/{r=$2} /^Anonymous:/{a=$2} END{if (r) printf "rss %d anon %d file %d\n", r, a, r-a}' /proc/$sp/smaps_rollup 2>/dev/null
        sleep 0.5; done > $out/$label-$r.mem ) &
    sleep 6
    perf stat -x, -e 'syscalls:sys_enter_futex,context-switches,task-clock' -p $sp -- sleep 8 2> $out/$label-$r.sys > /dev/null
    wait $bpid
    sleep 1
    a=$(grep -o 'acked [0-9]* ([0-9]*/s)' $f | grep -o '([0-9]*' | tr -d '(')
    echo "$label-$r ($e): $(grep -o 'acked [0-9]* ([0-9]*/s)' $f) $(grep 'group 0' $f | grep -o 'p50.*ms p99 [0-9.]* ms') | $(grep -o 'cpu [0-9.]* s over' $f) | $(grep -o 'peak [0-9.]* MiB' $f) | max anon $(sort -k4 -n $out/$label-$r.mem | tail -1 | awk '{printf "%.1f MiB", $4/1024}') | per event: $(awk -F, -v a=$a '{printf "%s %.3f ", $3, $1/(a*8)}' $out/$label-$r.sys) | $(tr '\n' ' ' < $out/$label-$r.threads) | $(grep -o 'load average.*' $f | head -1)"
  done
done
