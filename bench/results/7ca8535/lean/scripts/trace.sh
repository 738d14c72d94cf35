#!/usr/bin/env bash
# trace.sh BIN OUT: threads=1 server, room load at low rate, strace -f of the server for 3 s
set -u
BIN=$1; OUT=$2; shift 2
D=$(mktemp -d /tmp/lean/t.XXXX); PORT=$((20000 + RANDOM % 20000)); mkdir -p $D/data
cat > $D/p.toml <<T
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$D/data"
threads = ${THREADS:-1}
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
$BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 1
/tmp/lean/bins/parley-bench chat --ns room --conns ${CONNS:-200} --rate ${RATE:-20} --duration 12 "$@" --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 5
timeout 3 strace -f -tt -p $SP -o $OUT 2>/dev/null
wait $BP; kill $SP; wait $SP 2>/dev/null
echo $D
