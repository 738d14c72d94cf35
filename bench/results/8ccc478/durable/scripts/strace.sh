#!/usr/bin/env bash
# strace.sh BIN NS OUT: chat 200 load; strace -f -tt of every thread for 2 s from second 8
set -u
BIN=$1; NS=$2; OUT=$3; B=${BENCH:-/tmp/durable/bins/parley-bench}
. "$(dirname "$0")/conf.sh"
mkdir -p $OUT; D=$OUT; PORT=$((20000 + RANDOM % 12000)); conf $D $PORT
nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
nice -n -15 $B chat --ns $NS --conns 200 --rate 200 --duration 14 --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
timeout 2 strace -f -tt -p $SP -o $D/strace.txt 2>/dev/null
wait $BP; kill $SP; wait $SP 2>/dev/null; rm -rf $D/data
for t in /proc/$SP/task/*; do :; done
