#!/bin/bash
# one compare run with perf stat attached to the server from 8 s for 8 s
B=${PARLEY_BENCH_BIN:-build/tools/bench/parley-bench}  # run from the repository root
OUT=$1; name=$2; bin=$3; ev=$4
$B compare chat --ns room --conns 2000 --rate 2000 --targets parley --parley-bin $bin --duration 20 --threads 2 --no-progress --json $OUT/$name.json > $OUT/$name.txt 2>&1 &
bp=$!
sleep 9
pid=$(pgrep -f "$bin serve" | head -1)
[ -z "$pid" ] && pid=$(pgrep -x parley | head -1)
perf stat -e "$ev" -p $pid -- sleep 8 > $OUT/$name.perf 2>&1
wait $bp
echo "$name :: $(grep -E '^  parley ' $OUT/$name.txt | tail -1)"
grep -E 'task-clock|context|epoll|sendto|write|read|recv|futex|migr' $OUT/$name.perf
