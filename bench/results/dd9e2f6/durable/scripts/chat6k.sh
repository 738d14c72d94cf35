#!/usr/bin/env bash
# chat6k.sh BIN OUT [DURATION]: the chat-6k preset (10,000 connections in channels
# of 20, 6,000 durable msg/s) against BIN for DURATION s (60) after a 10 s connect
# ramp, generator (2 threads) beside the server, both at nice -15; then the server's
# /metrics and its stage table (bench/stage_breakdown.sh). Config as
# bench/results/d027573/parley.toml (the record's).
set -u
BIN=$1; OUT=$2; DUR=${3:-60}; B=${BENCH:-/tmp/durable/bins/parley-bench}
REPO=${REPO:-/work/wt/durable}
mkdir -p $OUT/data; PORT=$((20000 + RANDOM % 12000))
cat > $OUT/parley.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$OUT/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
max_connections = 50000
publish_per_sec = 20000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
T
nice -n -15 $BIN serve --config $OUT/parley.toml > $OUT/server.log 2>&1 & SP=$!
sleep 1
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" > $OUT/load.txt
nice -n -15 $B chat-6k --duration $DUR --ramp-up 10 --threads 2 --target 127.0.0.1:$PORT --no-progress \
  --server-pid $SP --json $OUT/chat-6k.json > $OUT/chat-6k.txt 2>&1 & BP=$!
# Per-thread CPU (schedstat, ns) over 20 s of the load phase (from second 20 after
# the start: the 10 s connect ramp is over).
snap() { for t in /proc/$SP/task/*; do echo "${t##*/} $(tr ' ' _ < $t/comm) $(cat $t/schedstat)"; done; }
sleep 20; snap > $OUT/threads.a; sleep 20; snap > $OUT/threads.b
# on CPU, and runnable but waiting for a CPU (schedstat's second field), per second
join <(sort $OUT/threads.a) <(sort $OUT/threads.b) | awk '{d=$7-$3; w=$8-$4; n=$9-$5; if (d>0) printf "%-8s %-16s on cpu %.3f cores, waiting for a cpu %.3f s/s, %.0f slices/s\n", $1, $2, d/20e9, w/20e9, n/20}' > $OUT/threads.txt
wait $BP
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/load.txt
curl -s http://127.0.0.1:$PORT/metrics > $OUT/metrics.txt
kill $SP; wait $SP 2>/dev/null
sh $REPO/bench/stage_breakdown.sh $OUT/metrics.txt > $OUT/stages.txt
rm -rf $OUT/data
cat $OUT/load.txt $OUT/threads.txt; grep -E "^  (ack|delivery) |acked/s|deliveries/s|accepted|server CPU|generator CPU|deliveries/server|peak RSS|verdict" $OUT/chat-6k.txt; cat $OUT/stages.txt
