#!/usr/bin/env bash
# pair_servers.sh OUT ROUNDS "A_CMD" "B_CMD" [bench args...]: two servers side by side
# (commands with @PORT@ and @DIR@ for their port and a scratch dir), each with its own
# parley-bench at the same time; per round over the same window: perf task-clock,
# schedstat runtime and the bench's /proc CPU, per delivery, and the ratio B/A of each.
# Run under bench/worlds/prio.sh. BENCH=path/to/parley-bench.
set -u
OUT=$1; ROUNDS=$2; AC=$3; BC=$4; shift 4
B=${BENCH:?BENCH=parley-bench}
mkdir -p "$OUT"
sst() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{s+=$1} END {printf "%.0f\n", s}'; }
for r in $(seq 1 $ROUNDS); do
  D=$OUT/round-$r; mkdir -p $D/a $D/b
  PA=$((20000 + RANDOM % 20000)); PB=$((PA + 1))
  AC1=${AC//@PORT@/$PA}; eval "exec ${AC1//@DIR@/$D/a}" > $D/a/log 2>&1 & SA=$!
  AC2=${BC//@PORT@/$PB}; eval "exec ${AC2//@DIR@/$D/b}" > $D/b/log 2>&1 & SB=$!
  sleep 1.5
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  $B "$@" --no-history --target 127.0.0.1:$PA --no-progress --server-pid $SA > $D/a/bench.txt 2>&1 & BA=$!
  $B "$@" --no-history --target 127.0.0.1:$PB --no-progress --server-pid $SB > $D/b/bench.txt 2>&1 & BB=$!
  sleep ${PERF_AT:-5}
  a0=$(sst $SA); b0=$(sst $SB)
  perf stat -x, -e task-clock -p $SA -o $D/a/perf.txt -- sleep ${PERF_S:-12} & PPA=$!
  perf stat -x, -e task-clock -p $SB -o $D/b/perf.txt -- sleep ${PERF_S:-12} & PPB=$!
  wait $PPA $PPB
  a1=$(sst $SA); b1=$(sst $SB)
  wait $BA $BB
  kill $SA $SB; wait $SA $SB 2>/dev/null
  ta=$(awk -F, '/task-clock/ {print $1}' $D/a/perf.txt); tb=$(awk -F, '/task-clock/ {print $1}' $D/b/perf.txt)
  da=$(awk '$1=="deliveries/s" {print $2; exit}' $D/a/bench.txt); db=$(awk '$1=="deliveries/s" {print $2; exit}' $D/b/bench.txt)
  ca=$(awk '/server CPU s \(load\)/ {print $5}' $D/a/bench.txt); cb=$(awk '/server CPU s \(load\)/ {print $5}' $D/b/bench.txt)
  va=$(grep -c "verdict: PASS" $D/a/bench.txt); vb=$(grep -c "verdict: PASS" $D/b/bench.txt)
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg) | A deliv/s $da pass $va task-clock $ta ms schedstat $(( (a1-a0)/1000000 )) ms /proc $ca s | B deliv/s $db pass $vb task-clock $tb ms schedstat $(( (b1-b0)/1000000 )) ms /proc $cb s | CPU per delivery B/A: task-clock $(echo $tb $db $ta $da | awk '{printf "%.3f", ($1/$2)/($3/$4)}') schedstat $(echo $((b1-b0)) $db $((a1-a0)) $da | awk '{printf "%.3f", ($1/$2)/($3/$4)}') proc $(echo $cb $db $ca $da | awk '{printf "%.3f", ($1/$2)/($3/$4)}')" | tee -a $OUT/pairs.log
done
