#!/usr/bin/env bash
# prof.sh BIN LABEL: room-200 load (nice -15); perf record -g of the server for 8 s, 8 s in.
# LABEL=floor runs bench/floor. THREADS=n sets threads. Prints the perf.data path.
set -u
BIN=$1; LABEL=$2; shift 2; B=${BENCH:-/tmp/h-deliv/bins/parley-bench}
D=$(mktemp -d /tmp/h-deliv/runs/p.XXXX); PORT=$((20000 + RANDOM % 20000)); mkdir -p $D/data
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
if [ "$LABEL" = floor ]; then nice -n -15 $BIN $PORT > $D/log 2>&1 & SP=$!; else nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!; fi
sleep 1
nice -n -15 $B chat --ns room --conns ${CONNS:-200} --rate ${RATE:-200} --duration 20 "$@" --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
perf record -F ${FREQ:-4000} ${CG:--g} -p $SP -o $D/perf.data -- sleep 8 >/dev/null 2>&1
wait $BP; kill $SP; wait $SP 2>/dev/null
echo "$LABEL $D/perf.data $(grep 'deliveries/server' $D/bench.txt)"
