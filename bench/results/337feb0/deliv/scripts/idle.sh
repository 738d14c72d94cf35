#!/usr/bin/env bash
# idle.sh BIN LABEL: server CPU over 15 s with 200 joined idle clients (room ns).
set -u
BIN=$1; LABEL=$2; B=/work/wt/deliv/build/tools/bench/parley-bench
D=$(mktemp -d /tmp/deliv/idle.XXXX); PORT=$((20000 + RANDOM % 20000))
cat > $D/p.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$D/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
T
mkdir -p $D/data
nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
$B chat --ns room --conns 200 --rate 0 --duration 25 --target 127.0.0.1:$PORT --no-progress --no-history > $D/bench.txt 2>&1 & BP=$!
sleep 7
t() { awk '{print $14+$15}' /proc/$SP/stat; }
a=$(t); sleep 15; b=$(t)
echo "$LABEL idle server CPU ticks(1/100 s) over 15 s: $((b-a))  load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${STRACE:-}" ]; then timeout 10 strace -c -f -p $SP 2>&1 | tail -25; fi
wait $BP; kill $SP; wait $SP 2>/dev/null
