#!/usr/bin/env bash
# ctx.sh BIN LABEL: room-200 load; per-thread voluntary/involuntary context switches over 10 s of it
set -u
BIN=$1; LABEL=$2; B=${BENCH:-/tmp/deliv/bins/parley-bench}
mkdir -p /tmp/deliv/runs; D=$(mktemp -d /tmp/deliv/runs/ctx.XXXX); PORT=$((20000 + RANDOM % 20000))
mkdir -p $D/data
cat > $D/p.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$D/data"
${THREADS:+threads = $THREADS}
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
nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
nice -n -15 $B chat --ns room --conns 200 --rate 200 --duration 20 --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
snap() { for t in /proc/$SP/task/*; do echo "$(cat $t/comm) $(awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status)"; done; }
snap > $D/a; sleep 10; snap > $D/b
paste $D/a $D/b | awk '{dv=$5-$2; dn=$6-$3; if (dv+dn>0) printf "%-20s vol/msg %.2f invol/msg %.2f\n", $1, dv/2000, dn/2000}'
wait $BP; kill $SP; wait $SP 2>/dev/null
echo "$LABEL $(grep -E 'server CPU s' $D/bench.txt) load $(cut -d' ' -f1-3 /proc/loadavg)"
