#!/usr/bin/env bash
# prof2.sh OUTDIR BINDIR RATE CONNS: dwarf call graph of the whole server for 6 s mid-run
set -u
out=$1; bindir=$2; rate=$3; conns=$4; shift 4
mkdir -p $out
cd /work/wt/events
PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=/tmp/h-events/base/parley-bench \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration 25 --drain 10 "$@" > $out/bench.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/bench.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
sleep 10
perf record --call-graph dwarf,16384 -F 250 -p $sp -o $out/perf.data -- sleep 6 > /dev/null 2>&1
wait $bpid
