#!/usr/bin/env bash
# pair_floor.sh FLOOR OUT ROUNDS "BASE_FLAGS" "NEW_FLAGS" [bench args...]
# Two parley-floor servers side by side (own ports), e.g. "" (one send() per delivery)
# against "--io-uring=defer", each driven by its own parley-bench at the same time so
# both see the same machine; run it under bench/worlds/prio.sh. Per round: server
# task-clock and context switches over the same 8 s window (perf stat, ns precision)
# and the bench's server CPU and deliveries; then medians of new/base.
# (bench/results/8ccc478/deliv2/scripts/pair.sh, with floors instead of Parley.)
# TICK=20 runs both as floor-tick (one send per connection per 20 ms tick).
set -u
FLOOR=$1; OUT=$2; ROUNDS=${3:-3}; BF=$4; NF=$5; shift 5
B=${BENCH:-$(dirname "$FLOOR")/parley-bench}
mkdir -p "$OUT"
for r in $(seq 1 $ROUNDS); do
  D=$OUT/round-$r; mkdir -p $D/base $D/new
  PB=$((20000 + RANDOM % 20000)); PN=$((PB + 1))
  $FLOOR $PB ${TICK:-0} $BF > $D/base/log 2>&1 & SB=$!
  $FLOOR $PN ${TICK:-0} $NF > $D/new/log 2>&1 & SN=$!
  sleep 1
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  $B "$@" --no-history --target 127.0.0.1:$PB --no-progress --server-pid $SB > $D/base/bench.txt 2>&1 & BB=$!
  $B "$@" --no-history --target 127.0.0.1:$PN --no-progress --server-pid $SN > $D/new/bench.txt 2>&1 & BN=$!
  sleep ${PERF_AT:-5}
  ssb0=$(cat /proc/$SB/task/*/schedstat | awk '{s+=$1} END {printf "%.0f\n", s}'); ssn0=$(cat /proc/$SN/task/*/schedstat | awk '{s+=$1} END {printf "%.0f\n", s}')
  perf stat -x, -e task-clock,context-switches -p $SB -o $D/base/perf.txt -- sleep ${PERF_S:-8} & PPB=$!
  perf stat -x, -e task-clock,context-switches -p $SN -o $D/new/perf.txt -- sleep ${PERF_S:-8} & PPN=$!
  wait $PPB $PPN
  # The scheduler's own runtime of both over the same window (ns): perf's
  # task-clock and it disagree for the io_uring floor (README).
  ssb=$(( $(cat /proc/$SB/task/*/schedstat | awk '{s+=$1} END {printf "%.0f\n", s}') - ssb0 )); ssn=$(( $(cat /proc/$SN/task/*/schedstat | awk '{s+=$1} END {printf "%.0f\n", s}') - ssn0 ))
  wait $BB $BN
  kill $SB $SN; wait $SB $SN 2>/dev/null
  cb=$(awk '/server CPU s \(load\)/ {print $5}' $D/base/bench.txt)
  cn=$(awk '/server CPU s \(load\)/ {print $5}' $D/new/bench.txt)
  db=$(awk '$1=="deliveries/s" {print $2; exit}' $D/base/bench.txt)
  dn=$(awk '$1=="deliveries/s" {print $2; exit}' $D/new/bench.txt)
  vb=$(grep -c "verdict: PASS" $D/base/bench.txt); vn=$(grep -c "verdict: PASS" $D/new/bench.txt)
  tb=$(awk -F, '/task-clock/ {print $1}' $D/base/perf.txt); tn=$(awk -F, '/task-clock/ {print $1}' $D/new/perf.txt)
  xb=$(awk -F, '/context-switches/ {print $1}' $D/base/perf.txt); xn=$(awk -F, '/context-switches/ {print $1}' $D/new/perf.txt)
  echo "round $r task-clock ms over ${PERF_S:-8} s: base $tb new $tn | context switches base $xb new $xn | task-clock new/base $(echo "$tn $tb" | awk '{printf "%.3f", $1/$2}')" | tee -a $OUT/taskclock.log
  echo "round $r schedstat ms over the window: base $((ssb/1000000)) new $((ssn/1000000)) | schedstat new/base $(echo "$ssn $ssb" | awk '{printf "%.3f", $1/$2}')" | tee -a $OUT/schedstat.log
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg): base CPU $cb deliv/s $db pass $vb | new CPU $cn deliv/s $dn pass $vn | CPU per delivery new/base $(echo "$cn $dn $cb $db" | awk '{printf "%.3f", ($1/$2)/($3/$4)}')" | tee -a $OUT/pairs.log
done
med() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
echo "median new/base over $ROUNDS rounds: task-clock (same window, equal offered load) $(grep '^round' $OUT/taskclock.log | awk '{print $NF}' | med), schedstat (same window) $(grep '^round' $OUT/schedstat.log | awk '{print $NF}' | med), CPU per delivery (bench, 10 ms ticks) $(grep '^round' $OUT/pairs.log | awk '{print $NF}' | med)" | tee $OUT/median.txt
