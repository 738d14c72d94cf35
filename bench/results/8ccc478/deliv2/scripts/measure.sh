#!/usr/bin/env bash
# measure.sh BIN LABEL [bench args...]: room-200 load on one server (nice -15); 8 s into
# it, for 8 s: perf stat on the server's threads (syscalls, context switches, task-clock),
# system-wide counts of wake-ups *of* the server's threads (sched_wakeup filtered on the
# wakee's comm), and utime/stime from /proc. LABEL=floor runs bench/floor (parley-floor PORT).
# THREADS=n sets [server] threads.
set -u
BIN=$1; LABEL=$2; shift 2; B=${BENCH:-/tmp/h-deliv/bins/parley-bench}
D=$(mktemp -d /tmp/h-deliv/runs/m.XXXX); PORT=$((20000 + RANDOM % 20000)); mkdir -p $D/data
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
L0=$(cut -d' ' -f1-3 /proc/loadavg)
nice -n -15 $B chat --ns room --conns ${CONNS:-200} --rate ${RATE:-200} --duration 20 "$@" --target 127.0.0.1:$PORT --no-progress --server-pid $SP > $D/bench.txt 2>&1 & BP=$!
sleep 8
if [ "$LABEL" = floor ]; then F='comm == "parley-floor"'; else F='comm ~ "parley-loop*"'; fi
ut() { awk '{print $14, $15}' /proc/$SP/stat; }
U0=$(ut)
snap() { for t in /proc/$SP/task/*; do echo "$(cat $t/comm | tr -d ' ') $(awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status)"; done; }
snap > $D/cs0
perf stat -a -e sched:sched_wakeup --filter "$F" -- sleep 8 > $D/wake.txt 2>&1 &
WP=$!
perf stat -x, -e "context-switches,cpu-migrations,task-clock,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_futex,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_timerfd_settime" -p $SP -- sleep 8 > $D/stat.txt 2>&1
wait $WP
U1=$(ut)
snap > $D/cs1
wait $BP; kill $SP; wait $SP 2>/dev/null
HZ=$(getconf CLK_TCK)
msgs=$(awk '/sent msg\/s|msgs\/s|published\/s/ {print $2; exit}' $D/bench.txt)
echo "== $LABEL threads=${THREADS:-default} load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg) dir $D"
grep -E 'server CPU s|deliveries/s|deliveries/server|msg/s|p99' $D/bench.txt | head -8
echo "utime/stime over 8 s (s): $(echo $U0 $U1 | awk -v hz=$HZ '{printf "user %.2f sys %.2f", ($3-$1)/hz, ($4-$2)/hz}')"
cat $D/stat.txt | awk -F, '{printf "%-40s %s\n", $3, $1}'
grep sched_wakeup $D/wake.txt
echo "per-thread context switches over ~8 s (voluntary = sleeps, nonvoluntary = preempted):"
paste $D/cs0 $D/cs1 | awk '{dv=$5-$2; dn=$6-$3; if (dv+dn>0) printf "  %-16s vol %6d invol %6d\n", $1, dv, dn}'
