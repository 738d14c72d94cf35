#!/usr/bin/env bash
cd /tmp/churn; rm -rf data
BENCH=/work/wt/lead/build/tools/bench/parley-bench
./parley serve --config churn.toml > server.log 2>&1 &
pid=$!; sleep 1
( while kill -0 $pid 2>/dev/null; do echo "$(date +%s) $(awk '/VmRSS/{print $2}' /proc/$pid/status)"; sleep 2; done ) > rss.txt &
$BENCH churn --target 127.0.0.1:17751 --ns chat --conns 48 --churn-channels 700000 --duration 240 --churn-idle-s 80 --server-pid $pid --no-progress --json churn-chat.json > churn-chat.txt 2>&1 &
b1=$!
$BENCH churn --target 127.0.0.1:17751 --ns tmp --conns 16 --churn-channels 700000 --duration 240 --churn-idle-s 80 --server-pid $pid --no-progress --json churn-tmp.json > churn-tmp.txt 2>&1 &
b2=$!
wait $b1 $b2
sleep 5; kill -TERM $pid; wait $pid
echo done
