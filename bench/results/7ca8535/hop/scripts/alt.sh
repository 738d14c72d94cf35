#!/usr/bin/env bash
# alt.sh BASE NEW OUT ROUNDS [bench args...]: the quiet-regime counterpart of pair.sh.
# One server at a time (so the loops sleep as they do on a quiet machine), base and new
# alternating (base, new, new, base, base, new, ...) so drift in the machine's load hits
# both; each run: chat load (default room 200) for 20 s and, 8 s in, for 8 s: perf stat
# on the server (task-clock, context switches, syscalls) and the loop threads' voluntary
# switches (= sleeps) from /proc. Prints one line per run and the medians per binary.
# THREADS=n sets [server] threads. Every process at the caller's priority (run it under
# bench/worlds/prio.sh).
set -u
BASE=$1; NEW=$2; OUT=$3; ROUNDS=${4:-4}; shift 4; ARGS=("$@")
B=${BENCH:-/tmp/h-hop/bins/parley-bench}
mkdir -p "$OUT"
run() {  # run LABEL BIN DIR
  local L=$1 BIN=$2 D=$3; mkdir -p $D/data
  local PORT=$((20000 + RANDOM % 20000))
  cat > $D/p.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$D/data"
${THREADS:+threads = $THREADS}
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
T
  $BIN serve --config $D/p.toml > $D/log 2>&1 & local SP=$!
  sleep 1
  local L0=$(cut -d' ' -f1-3 /proc/loadavg)
  $B "${ARGS[@]}" --duration ${DUR:-20} --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & local BP=$!
  sleep ${PERF_AT:-8}
  snap() { for t in /proc/$SP/task/*; do echo "$(cat $t/comm | tr -d ' ') $(awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status)"; done; }
  snap > $D/cs0
  perf stat -x, -e "task-clock,context-switches,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_epoll_ctl" -p $SP -o $D/perf.txt -- sleep ${PERF_S:-8}
  snap > $D/cs1
  wait $BP; kill $SP; wait $SP 2>/dev/null
  local tc=$(awk -F, '/task-clock/ {print $1}' $D/perf.txt)
  local cs=$(awk -F, '/context-switches/ {print $1}' $D/perf.txt)
  local ew=$(awk -F, '/epoll_wait/ {print $1}' $D/perf.txt)
  local fx=$(awk -F, '/futex/ {print $1}' $D/perf.txt)
  local wr=$(awk -F, '/sys_enter_write/ {print $1}' $D/perf.txt)
  local sl=$(paste $D/cs0 $D/cs1 | awk '$1 ~ /parley-loop/ {s += $5-$2} END {print s}')
  local dv=$(awk '$1=="deliveries/s" {print $2; exit}' $D/bench.txt)
  local ms=$(awk '$1=="deliveries/s" {print $2; exit}' $D/bench.txt)
  local pass=$(grep -c "verdict: PASS" $D/bench.txt)
  echo "$L tc_ms $tc cs $cs sleeps $sl epoll_wait $ew futex $fx write $wr deliv/s $dv pass $pass load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $OUT/runs.log
}
for r in $(seq 1 $ROUNDS); do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for w in $order; do
    if [ $w = base ]; then run base $BASE $OUT/r$r-base; else run new $NEW $OUT/r$r-new; fi
  done
done
for w in base new; do
  grep "^$w " $OUT/runs.log | awk '{print $3}' | sort -n | awk -v w=$w '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median %s task-clock ms over %d runs: %.1f\n", w, NR, m}' | tee -a $OUT/summary.log
  grep "^$w " $OUT/runs.log | awk '{print $7}' | sort -n | awk -v w=$w '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median %s loop sleeps over the 8 s: %d\n", w, m}' | tee -a $OUT/summary.log
done
# per-round ratio new/base (each round's two runs are adjacent in time)
for r in $(seq 1 $ROUNDS); do
  b=$(grep "^base " $OUT/runs.log | sed -n ${r}p | awk '{print $3}'); n=$(grep "^new " $OUT/runs.log | sed -n ${r}p | awk '{print $3}')
  echo "$n $b" | awk '{printf "%.3f\n", $1/$2}'
done | sort -n | awk '{v[NR]=$1; a=a" "$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "task-clock new/base per round (sorted):%s; median %.3f\n", a, m}' | tee -a $OUT/summary.log
