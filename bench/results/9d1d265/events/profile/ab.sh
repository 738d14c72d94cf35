#!/usr/bin/env bash
# ab.sh OUTDIR LABEL BINDIR RATE CONNS [extra]: one events.sh run with per-thread CPU of the server.
set -u
out=$1; label=$2; bindir=$3; rate=$4; conns=$5; shift 5
mkdir -p $out
cd /work/wt/events
PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/h-events/base/parley-bench} \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration ${DUR:-30} --drain 10 "$@" > $out/$label.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/$label.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
bash /tmp/h-events/threads.sh $sp $out/$label.threads &
wait $bpid
sleep 1
echo "== $label"; grep -E 'acked|group 0|server:|load|push intervals' $out/$label.txt; cat $out/$label.threads | tr '\n' ' '; echo
