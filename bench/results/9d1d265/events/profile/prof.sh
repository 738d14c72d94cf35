#!/usr/bin/env bash
# usage: prof.sh OUTDIR RATE CONNS [extra bench flags]
set -u
out=$1; rate=$2; conns=$3; shift 3
mkdir -p $out
cd /work/wt/events
PARLEY_BIN=${PARLEY_BIN:-build/src/server/parley} PARLEY_BENCH_BIN=${PARLEY_BENCH_BIN:-build/tools/bench/parley-bench} \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration 30 --drain 10 "$@" > $out/bench.txt 2>&1 &
bpid=$!
for i in $(seq 50); do sp=$(grep -o 'server pid [0-9]*' $out/bench.txt | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
sleep 8
perf record -g -F 499 -p $sp -o $out/perf.data -- sleep 12 > /dev/null 2>&1
perf stat -e 'syscalls:sys_enter_*' -p $sp -- sleep 5 2> $out/syscalls.txt > /dev/null
wait $bpid
