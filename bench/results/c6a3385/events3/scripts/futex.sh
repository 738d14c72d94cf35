#!/usr/bin/env bash
# futex.sh OUT LABEL BINDIR RATE CONNS: futex call graphs (dwarf) of the server for 3 s mid-run
set -u
out=$1; label=$2; bindir=$3; rate=$4; conns=$5; shift 5
mkdir -p $out; cd "${REPO:-/work/main}"
PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration 20 --drain 5 "$@" > $out/$label.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/$label.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
sleep 8
perf record -e syscalls:sys_enter_futex --call-graph dwarf,8192 -p $sp -o $out/$label.futex.data -- sleep 2 > /dev/null 2>&1
wait $bpid
grep -E 'acked|group 0' $out/$label.txt
