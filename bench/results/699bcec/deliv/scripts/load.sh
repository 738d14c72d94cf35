#!/usr/bin/env bash
# load.sh BIN LABEL [bench args...]: server at nice -15, chat room load; PROF=perf|strace attaches for 10 s
set -u
BIN=$1; LABEL=$2; shift 2; B=${BENCH:-/tmp/deliv/bins/parley-bench}
mkdir -p /tmp/deliv/runs; D=$(mktemp -d /tmp/deliv/runs/load.XXXX); PORT=$((20000 + RANDOM % 20000))
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
mkdir -p $D/data
if [ "$LABEL" = floor ]; then nice -n -15 $BIN $PORT > $D/log 2>&1 & SP=$!; else nice -n -15 $BIN serve --config $D/p.toml > $D/log 2>&1 & SP=$!; fi
sleep 1
nice -n -15 $B chat --ns room --conns 200 --rate 200 --duration 15 "$@" --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
case "${PROF:-}" in
  perf) perf record -F ${FREQ:-2000} ${CG:--g} -p $SP -o $D/perf.data -- sleep 8 2>/dev/null >/dev/null; echo "perf: $D/perf.data";;
  stat) perf stat ${PT:-} -e "syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_futex,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read,syscalls:sys_enter_write,context-switches,task-clock" -p $SP -- sleep 8 2>&1 | grep -E "sys_enter|switch|task-clock";;
  strace) timeout 8 strace -c -f -p $SP -o $D/strace.txt; cat $D/strace.txt | head -30;;
esac
wait $BP; kill $SP; wait $SP 2>/dev/null
echo "$LABEL $(grep -E 'server CPU s|deliveries/server|deliveries/s ' $D/bench.txt | tr -s ' ' | tr '\n' ' ') load $(cut -d' ' -f1-3 /proc/loadavg) dir $D"
