#!/usr/bin/env bash
# threads.sh BIN: threads=1 server under room 200 load; per-thread context switches over 8 s, 8 s in.
set -u
BIN=$1; B=/tmp/lean/bins/parley-bench
D=$(mktemp -d /tmp/lean/th.XXXX); PORT=$((20000 + RANDOM % 20000)); mkdir -p $D/data
cat > $D/p.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$D/data"
threads = 1
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
if [ -n "${FLOOR:-}" ]; then nice -n -15 $BIN $PORT > $D/log 2>&1 & SP=$!; else nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!; fi
sleep 1
if [ -n "${SLICE:-}" ]; then for t in /proc/$SP/task/*; do c=$(cat $t/comm); case $c in parley-loop*|parley-floor) /tmp/lean/slice/setslice $(basename $t) $SLICE;; esac; done; fi
nice -n -15 $B chat --ns room --conns 200 --rate 200 --duration 20 --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
snap() { for t in /proc/$SP/task/*; do echo "$(cat $t/comm | tr -d ' ') $(awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status) $(awk '{print $14+$15}' $t/stat)"; done; }
snap > $D/cs0; sleep 8; snap > $D/cs1
wait $BP; kill $SP; wait $SP 2>/dev/null
paste $D/cs0 $D/cs1 | awk '{dv=$6-$2; dn=$7-$3; dt=$8-$4; if (dv+dn>0) printf "  %-16s vol %6d invol %6d ticks %d\n", $1, dv, dn, dt}'
