#!/usr/bin/env bash
# pair.sh BASE NEW OUT ROUNDS [bench args...]: the base and new servers side by side
# (same config, own ports), each driven by its own parley-bench at the same time, so
# both see the same machine; every process at nice -15. Prints per-round server CPU
# and the ratio new/base, then the median ratio. THREADS=n sets threads; DURABLE=1
# makes the namespace durable (embedded store). BASE_THREADS / NEW_THREADS set one side's.
set -u
BASE=$1; NEW=$2; OUT=$3; ROUNDS=${4:-3}; shift 4
B=${BENCH:-/tmp/h-deliv/bins/parley-bench}
mkdir -p "$OUT"
conf() {  # conf DIR PORT [THREADS]
  mkdir -p $1/data
  cat > $1/p.toml <<T
[server]
listen = "127.0.0.1:$2"
store = "embedded"
data_dir = "$1/data"
${3:+threads = $3}
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = ${DURABLE:+true}${DURABLE:-false}
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
T
}
for r in $(seq 1 $ROUNDS); do
  D=$OUT/round-$r; mkdir -p $D/base $D/new
  PB=$((20000 + RANDOM % 20000)); PN=$((PB + 1))
  conf $D/base $PB ${BASE_THREADS:-${THREADS:-}}; conf $D/new $PN ${NEW_THREADS:-${THREADS:-}}
  # FLOOR_BASE=1: BASE is bench/floor's parley-floor (it takes the port).
  if [ -n "${FLOOR_BASE:-}" ]; then nice -n -15 $BASE $PB > $D/base/log 2>&1 & SB=$!
  else nice -n -15 $BASE serve --config $D/base/p.toml > $D/base/log 2>&1 & SB=$!; fi
  nice -n -15 $NEW serve --config $D/new/p.toml > $D/new/log 2>&1 & SN=$!
  sleep 1
  # NEW_SLICE=NS: the new server's loop threads get that EEVDF slice (sched_attr.sched_runtime; SETSLICE: the
  # helper built from results/7ca8535/lean/scripts/setslice.c).
  if [ -n "${NEW_SLICE:-}" ]; then for t in /proc/$SN/task/*; do case $(cat $t/comm) in parley-loop*) ${SETSLICE:-/tmp/lean/slice/setslice} $(basename $t) $NEW_SLICE >/dev/null;; esac; done; fi
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  nice -n -15 $B "$@" --target 127.0.0.1:$PB --no-progress --server-pid $SB > $D/base/bench.txt 2>&1 & BB=$!
  nice -n -15 $B "$@" --target 127.0.0.1:$PN --no-progress --server-pid $SN > $D/new/bench.txt 2>&1 & BN=$!
  # task-clock (ns precision; /proc's CPU seconds are in 10 ms ticks) and
  # context switches of both servers over the same window of the load phase.
  sleep ${PERF_AT:-5}
  perf stat -x, -e task-clock,context-switches -p $SB -o $D/base/perf.txt -- sleep ${PERF_S:-8} & PPB=$!
  perf stat -x, -e task-clock,context-switches -p $SN -o $D/new/perf.txt -- sleep ${PERF_S:-8} & PPN=$!
  wait $BB $BN $PPB $PPN
  kill $SB $SN; wait $SB $SN 2>/dev/null
  cb=$(awk '/server CPU s \(load\)/ {print $5}' $D/base/bench.txt)
  cn=$(awk '/server CPU s \(load\)/ {print $5}' $D/new/bench.txt)
  db=$(awk '$1=="deliveries/s" {print $2; exit}' $D/base/bench.txt)
  dn=$(awk '$1=="deliveries/s" {print $2; exit}' $D/new/bench.txt)
  vb=$(grep -c "verdict: PASS" $D/base/bench.txt); vn=$(grep -c "verdict: PASS" $D/new/bench.txt)
  tb=$(awk -F, '/task-clock/ {print $1}' $D/base/perf.txt); tn=$(awk -F, '/task-clock/ {print $1}' $D/new/perf.txt)
  xb=$(awk -F, '/context-switches/ {print $1}' $D/base/perf.txt); xn=$(awk -F, '/context-switches/ {print $1}' $D/new/perf.txt)
  echo "round $r task-clock ms over ${PERF_S:-8} s: base $tb new $tn | context switches base $xb new $xn | task-clock new/base $(echo "$tn $tb" | awk '{printf "%.3f", $1/$2}')" | tee -a $OUT/taskclock.log
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg): base CPU $cb deliv/s $db pass $vb | new CPU $cn deliv/s $dn pass $vn | CPU new/base $(echo "$cn $cb" | awk '{printf "%.3f", $1/$2}') | CPU per delivery new/base $(echo "$cn $dn $cb $db" | awk '{printf "%.3f", ($1/$2)/($3/$4)}')" | tee -a $OUT/pairs.log
done
grep "^round" $OUT/pairs.log | awk "{print \$NF}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median new/base server CPU per delivery over %d rounds: %.3f\n", NR, m}' | tee -a $OUT/pairs.log
grep "^round" $OUT/taskclock.log | awk "{print \$NF}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median new/base task-clock (same 8 s window, equal offered load) over %d rounds: %.3f\n", NR, m}' | tee -a $OUT/taskclock.log
