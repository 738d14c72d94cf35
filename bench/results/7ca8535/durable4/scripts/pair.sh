#!/usr/bin/env bash
# pair.sh BASE NEW OUT ROUNDS [bench args...]: base and new servers side by side (same
# config from ../../8ccc478/durable/scripts/conf.sh, own ports), each driven by its own
# parley-bench at the same time; run it under bench/worlds/prio.sh. Per round, over the
# same window of the load phase (from second PERF_AT, PERF_S seconds): each server's
# task-clock (perf stat, ns) and context switches, and each server thread's exact CPU
# (/proc/PID/task/*/schedstat), per message (the bench's --rate); then the medians.
# Differs from 8ccc478/durable/scripts/pair.sh by the task-clock and per-thread window.
set -u
BASE=$1; NEW=$2; OUT=$3; ROUNDS=${4:-3}; shift 4
B=${BENCH:-/tmp/h-durable/parley-bench}
REPO=${REPO:-/work/wt/durable}
. $REPO/bench/results/8ccc478/durable/scripts/conf.sh
RATE=$(echo "$@" | sed -n 's/.*--rate \([0-9]*\).*/\1/p'); RATE=${RATE:-200}
PERF_AT=${PERF_AT:-6}; PERF_S=${PERF_S:-10}
mkdir -p "$OUT"
snap() {  # snap PID: "comm tid cpu_ns" per thread
  for t in /proc/$1/task/*; do echo "$(tr ' ' _ < $t/comm) ${t##*/} $(awk '{print $1}' $t/schedstat)"; done
}
threads() {  # threads A B MSGS: us per message of each thread (comm with the tid order)
  join -j 2 <(sort -k2 $1) <(sort -k2 $2) | awk -v n=$3 '{d=$5-$3; if (d>0) printf "%s:%.1f ", $2, d/1000/n}'
}
for r in $(seq 1 $ROUNDS); do
  D=$OUT/round-$r; mkdir -p $D/base $D/new
  PB=$((20000 + RANDOM % 12000)); PN=$((PB + 1))
  conf $D/base $PB; conf $D/new $PN
  nice -n -15 $BASE serve --config $D/base/p.toml > $D/base/log 2>&1 & SB=$!
  nice -n -15 $NEW serve --config $D/new/p.toml > $D/new/log 2>&1 & SN=$!
  sleep 1
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  nice -n -15 $B "$@" ${BASE_ARGS:-} --target 127.0.0.1:$PB --no-progress --server-pid $SB > $D/base/bench.txt 2>&1 & BB=$!
  nice -n -15 $B "$@" ${NEW_ARGS:-} --target 127.0.0.1:$PN --no-progress --server-pid $SN > $D/new/bench.txt 2>&1 & BN=$!
  sleep $PERF_AT
  snap $SB > $D/base/sched.a; snap $SN > $D/new/sched.a
  perf stat -x, -e task-clock,context-switches -p $SB -o $D/base/perf.txt -- sleep $PERF_S & PPB=$!
  perf stat -x, -e task-clock,context-switches -p $SN -o $D/new/perf.txt -- sleep $PERF_S & PPN=$!
  wait $PPB $PPN
  snap $SB > $D/base/sched.b; snap $SN > $D/new/sched.b
  wait $BB $BN
  kill $SB $SN; wait $SB $SN 2>/dev/null
  rm -rf $D/base/data $D/new/data
  M=$((RATE * PERF_S))
  tb=$(awk -F, '/task-clock/ {print $1}' $D/base/perf.txt); tn=$(awk -F, '/task-clock/ {print $1}' $D/new/perf.txt)
  xb=$(awk -F, '/context-switches/ {print $1}' $D/base/perf.txt); xn=$(awk -F, '/context-switches/ {print $1}' $D/new/perf.txt)
  vb=$(grep -c "verdict: PASS" $D/base/bench.txt); vn=$(grep -c "verdict: PASS" $D/new/bench.txt)
  ab=$(awk '$1=="ack" {print $2"/"$4; exit}' $D/base/bench.txt); an=$(awk '$1=="ack" {print $2"/"$4; exit}' $D/new/bench.txt)
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg) | us/msg base $(echo "$tb $M" | awk '{printf "%.1f", $1*1000/$2}') new $(echo "$tn $M" | awk '{printf "%.1f", $1*1000/$2}') | cs/msg base $(echo "$xb $M" | awk '{printf "%.2f", $1/$2}') new $(echo "$xn $M" | awk '{printf "%.2f", $1/$2}') | pass $vb $vn | ack p50/p99 base $ab new $an | task-clock new/base $(echo "$tn $tb" | awk '{printf "%.3f", $1/$2}')" | tee -a $OUT/pairs.log
  echo "round $r threads us/msg base $(threads $D/base/sched.a $D/base/sched.b $M)| new $(threads $D/new/sched.a $D/new/sched.b $M)" | tee -a $OUT/threads.log
done
grep "^round" $OUT/pairs.log | awk '{print $NF}' | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median new/base task-clock (same window, equal offered load) over %d rounds: %.3f\n", NR, m}' | tee -a $OUT/pairs.log
