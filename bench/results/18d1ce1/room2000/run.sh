#!/bin/bash
# room2000 at 2000 msg/s, pre vs new, per-second timeline via --json
# usage: run.sh OUT ROUNDS SECS name=parley-binary... (each round runs the sides in the order listed)
# perf.sh OUT NAME PARLEY_BIN EVENTS: perf stat -e EVENTS on the server from 9 s for 8 s of a 20-s run
B=${PARLEY_BENCH_BIN:-build/tools/bench/parley-bench}  # run from the repository root
OUT=$1; ROUNDS=${2:-3}; DUR=${3:-20}; shift 3
mkdir -p $OUT
for r in $(seq 1 $ROUNDS); do
  for side in "$@"; do
    name=${side%%=*}; bin=${side#*=}
    load=$(cut -d' ' -f1 /proc/loadavg)
    $B compare chat --ns room --conns 2000 --rate 2000 --targets parley --parley-bin $bin --duration $DUR --threads 2 --no-progress --json $OUT/$name.$r.json > $OUT/$name.$r.txt 2>&1
    echo "$name $r load $load :: $(grep -E '^  parley ' $OUT/$name.$r.txt | tail -1)" | tee -a $OUT/pairs.txt
  done
done
