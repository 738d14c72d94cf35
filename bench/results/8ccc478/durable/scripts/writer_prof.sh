#!/usr/bin/env bash
# writer_prof.sh BIN OUT: durable chat 200 load; the store writer thread (the unnamed
# thread that is not the main one): its exact CPU over 10 s (schedstat) and a
# perf record -g of it alone at 20 kHz for 8 s.
set -u
BIN=$1; OUT=$2; B=${BENCH:-/tmp/durable/bins/parley-bench}
. "$(dirname "$0")/conf.sh"
mkdir -p $OUT; D=$OUT; PORT=$((20000 + RANDOM % 12000)); conf $D $PORT
nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
nice -n -15 $B chat --conns 200 --rate 200 --duration 24 --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 6
W=$(for t in /proc/$SP/task/*; do n=$(cat $t/comm); id=${t##*/}; [ "$id" != "$SP" ] && [[ "$n" != parley-loop* ]] && [[ "$n" != parley-read* ]] && echo "$(awk '{print $1}' $t/schedstat) $id"; done | sort -n | tail -1 | awk '{print $2}')
for t in /proc/$SP/task/*; do echo "$(cat $t/comm) ${t##*/} $(awk '{print $1}' $t/schedstat)"; done > $D/sched.a
sleep 10
for t in /proc/$SP/task/*; do echo "$(cat $t/comm) ${t##*/} $(awk '{print $1}' $t/schedstat)"; done > $D/sched.b
join -j 2 <(sort -k2 $D/sched.a) <(sort -k2 $D/sched.b) | awk -v w=$W '{d=$5-$3; if (d>0) printf "%-16s %s%s us/msg %.1f\n", $2, $1, ($1==w?" (writer)":""), d/1000/2000}' > $D/sched.txt
perf record -F 20000 -g -t $W -o $D/perf.data -- sleep 6 2>/dev/null >/dev/null
wait $BP; kill $SP; wait $SP 2>/dev/null; rm -rf $D/data
cat $D/sched.txt
