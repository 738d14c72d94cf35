#!/usr/bin/env bash
set -u
out=$1; bindir=$2; rate=$3; conns=$4; shift 4
mkdir -p $out; cd /work/wt/events
PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=/tmp/h-events/base/parley-bench \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration 20 --drain 5 "$@" > $out/bench.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/bench.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
sleep 8
perf record -e syscalls:sys_enter_futex --call-graph dwarf,8192 -p $sp -o $out/futex.data -- sleep 3 > /dev/null 2>&1
wait $bpid
