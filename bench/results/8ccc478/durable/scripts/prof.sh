#!/usr/bin/env bash
# prof.sh BIN NS OUT [bench args]: one server at nice -15, `chat --ns NS --conns 200
# --rate 200 --duration 24` against it; from second 8, 10 s of: per-thread CPU and
# context switches (/proc/PID/task), then PROF=stat: perf stat of every syscall and
# context switches; PROF=perf: perf record -g (8 s).
set -u
BIN=$1; NS=$2; OUT=$3; shift 3
B=${BENCH:-/tmp/durable/bins/parley-bench}
. "$(dirname "$0")/conf.sh"
mkdir -p $OUT; D=$OUT; PORT=$((20000 + RANDOM % 12000))
conf $D $PORT
nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
L0=$(cut -d' ' -f1-3 /proc/loadavg)
nice -n -15 $B chat --ns $NS --conns 200 --rate 200 --duration 24 "$@" --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
snap() { for t in /proc/$SP/task/*; do echo "$(tr ' ' _ < $t/comm) $(awk '{print $14+$15}' $t/stat) $(awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status)"; done; }
snap > $D/threads.a; sleep 10; snap > $D/threads.b
# ticks are 1/100 s; 2,000 messages in 10 s
paste $D/threads.a $D/threads.b | awk '{c=$6-$2; dv=$7-$3; dn=$8-$4; if (c+dv+dn>0) printf "%-18s cpu_ms/msg %.4f  vol/msg %.3f invol/msg %.3f\n", $1, c*10/2000, dv/2000, dn/2000}' > $D/threads.txt
case "${PROF:-stat}" in
  stat) perf stat -e 'syscalls:sys_enter_*,context-switches,cpu-migrations,task-clock' -p $SP -- sleep 5 2> $D/perfstat.raw >/dev/null
        awk '$1 ~ /^[0-9,.]+$/ && $1 != "0" {gsub(",","",$1); printf "%-40s %10s  per msg %.3f\n", $2, $1, $1/1000}' $D/perfstat.raw > $D/perfstat.txt;;
  perf) perf record -F ${FREQ:-1999} -g -p $SP -o $D/perf.data -- sleep 5 2>/dev/null >/dev/null;;
esac
wait $BP; kill $SP; wait $SP 2>/dev/null; rm -rf $D/data
echo "$NS $(grep -E 'server CPU s|deliveries/server' $D/bench.txt | tr -s ' ' | tr '\n' ' ') load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg)" | tee $D/summary.txt
