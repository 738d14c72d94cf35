#!/usr/bin/env bash
# pair.sh BASE NEW OUT ROUNDS [bench args...]: the base and new servers side by side
# (same config, own ports), each driven by its own parley-bench at the same time, so
# both see the same machine; every process at nice -15. Prints per-round server CPU
# and the ratio new/base, then the median ratio. THREADS=n sets threads; FSYNC=always
# sets fsync (conf.sh); BASE_ARGS / NEW_ARGS are added to one side's bench args only
# (BASE=NEW, BASE_ARGS='--ns room': the durable path against the same shape not durable).
# Also prints each server's stage means (queue_wait, append, ack) from its /metrics. `chat` is durable, `--ns room` is not. (From ../../../699bcec/deliv.)
set -u
BASE=$1; NEW=$2; OUT=$3; ROUNDS=${4:-3}; shift 4
B=${BENCH:-/tmp/durable/bins/parley-bench}
. "$(dirname "$0")/conf.sh"
mkdir -p "$OUT"
for r in $(seq 1 $ROUNDS); do
  D=$OUT/round-$r; mkdir -p $D/base $D/new
  # Ports below the ephemeral range (32768-): 2,000 client sockets once held a random one.
  PB=$((20000 + RANDOM % 12000)); PN=$((PB + 1))
  conf $D/base $PB; conf $D/new $PN
  nice -n -15 $BASE serve --config $D/base/p.toml > $D/base/log 2>&1 & SB=$!
  nice -n -15 $NEW serve --config $D/new/p.toml > $D/new/log 2>&1 & SN=$!
  sleep 1
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  nice -n -15 $B "$@" ${BASE_ARGS:-} --target 127.0.0.1:$PB --no-progress --server-pid $SB > $D/base/bench.txt 2>&1 & BB=$!
  nice -n -15 $B "$@" ${NEW_ARGS:-} --target 127.0.0.1:$PN --no-progress --server-pid $SN > $D/new/bench.txt 2>&1 & BN=$!
  wait $BB $BN
  # The servers' own stage histograms (bench/stage_breakdown.sh), from their start.
  curl -s http://127.0.0.1:$PB/metrics > $D/base/metrics.txt; curl -s http://127.0.0.1:$PN/metrics > $D/new/metrics.txt
  for s in base new; do sh ${REPO:-/work/wt/durable}/bench/stage_breakdown.sh $D/$s/metrics.txt > $D/$s/stages.txt 2>/dev/null; done
  sb=$(awk -F'|' '$2 ~ /queue_wait|append|ack/ {gsub(/ /,"",$2); gsub(/ /,"",$4); printf "%s %s ", $2, $4}' $D/base/stages.txt)
  sn=$(awk -F'|' '$2 ~ /queue_wait|append|ack/ {gsub(/ /,"",$2); gsub(/ /,"",$4); printf "%s %s ", $2, $4}' $D/new/stages.txt)
  echo "round $r server stage means ms: base $sb| new $sn" | tee -a $OUT/stages.log
  kill $SB $SN; wait $SB $SN 2>/dev/null
  rm -rf $D/base/data $D/new/data  # the stores' files: not results
  cb=$(awk '/server CPU s \(load\)/ {print $5}' $D/base/bench.txt)
  cn=$(awk '/server CPU s \(load\)/ {print $5}' $D/new/bench.txt)
  db=$(awk '$1=="deliveries/s" {print $2; exit}' $D/base/bench.txt)
  dn=$(awk '$1=="deliveries/s" {print $2; exit}' $D/new/bench.txt)
  vb=$(grep -c "verdict: PASS" $D/base/bench.txt); vn=$(grep -c "verdict: PASS" $D/new/bench.txt)
  ab=$(awk '$1=="ack" {print $2"/"$4; exit}' $D/base/bench.txt); an=$(awk '$1=="ack" {print $2"/"$4; exit}' $D/new/bench.txt)
  echo "round $r ack p50/p99 ms base $ab new $an" | tee -a $OUT/acks.log
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg): base CPU $cb deliv/s $db pass $vb | new CPU $cn deliv/s $dn pass $vn | CPU new/base $(echo "$cn $cb" | awk '{printf "%.3f", $1/$2}') | CPU per delivery new/base $(echo "$cn $dn $cb $db" | awk '{printf "%.3f", ($1/$2)/($3/$4)}')" | tee -a $OUT/pairs.log
done
grep "^round" $OUT/pairs.log | awk "{print \$NF}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median new/base server CPU per delivery over %d rounds: %.3f\n", NR, m}' | tee -a $OUT/pairs.log
