#!/usr/bin/env bash
# cg.sh BIN OUT: callgrind of a threads=1 server under room load (CONNS, RATE); counts
# zeroed 8 s in, dumped 10 s later; prints instructions (Ir) per message of that window.
set -u
BIN=$1; OUT=$2; shift 2
B=${BENCH:-/tmp/lean/bins/parley-bench}
D=$(mktemp -d /tmp/lean/cg.XXXX); PORT=$((20000 + RANDOM % 20000)); mkdir -p $D/data $OUT
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
valgrind --tool=callgrind --callgrind-out-file=$OUT/callgrind.out.%p --dump-instr=no $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!
sleep 6
$B chat --ns room --conns ${CONNS:-200} --rate ${RATE:-50} --duration 45 "$@" --target 127.0.0.1:$PORT --no-progress > $OUT/bench.txt 2>&1 & BP=$!
sleep 25
callgrind_control -z $SP >/dev/null
sleep 10
callgrind_control -d $SP >/dev/null
wait $BP; kill $SP; wait $SP 2>/dev/null
F=$(ls -t $OUT/callgrind.out.* | grep -v '\.[0-9]*$' | head -1)
F=$(ls -S $OUT/callgrind.out.*.* 2>/dev/null | head -1)
echo "dump $F"
grep -E "^summary|^totals" $F
grep -E "deliveries/s|msg/s|verdict" $OUT/bench.txt | head -5
