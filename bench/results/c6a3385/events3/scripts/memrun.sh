#!/usr/bin/env bash
# memrun.sh OUT LABEL BINDIR RATE CONNS [extra]: one events_keep.sh run sampling smaps_rollup every 0.5 s
# and calling malloc_stats() (gdb) on the server 2 s before the load ends; server.log kept.
set -u
out=$1; label=$2; bindir=$3; rate=$4; conns=$5; shift 5
mkdir -p $out; cd "${REPO:-/work/main}"
dur=${DUR:-30}
KEEP_LOG=$out/$label.server.log PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
  nice -n -15 bash $(dirname "$0")/events_keep.sh hunt-20k --rate $rate --conns $conns --duration $dur --drain 10 "$@" > $out/$label.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/$label.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
t0=$(date +%s.%N)
( while kill -0 $sp 2>/dev/null; do
    awk -v t=$(date +%s.%N) -v t0=$t0 '/^Rss:/{r=$2} /^Anonymous:/{a=$2} /^Pss_File:/{f=$2} END{printf "%.1f rss %d anon %d file %d\n", t-t0, r, a, f}' /proc/$sp/smaps_rollup 2>/dev/null
    sleep 0.5; done > $out/$label.mem ) &
if [ -n "${GDB:-}" ]; then
  sleep $((dur + 2 - 2))
  gdb -batch -p $sp -ex 'call (void)malloc_stats()' > /dev/null 2>&1
fi
wait $bpid
sleep 0.5
echo "== $label"; grep -E 'acked|group 0|server:|load' $out/$label.txt
sort -k3 -n $out/$label.mem | tail -1 | sed 's/^/max rss sample: /'
sort -k5 -n $out/$label.mem | tail -1 | sed 's/^/max anon sample: /'
