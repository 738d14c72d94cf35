set -u
cd /work/wt/worlds
bench/node_modules/bun/bin/bun.exe bench/peers/bun-room.js 7988 > /tmp/bun.log 2>&1 &
PID=$!
sleep 1
/tmp/parley-bench-0432d42 broadcast --target 127.0.0.1:7988 --threads 2 --duration 18 --no-history --label bun --server-pid $PID --no-progress > /tmp/bunprof.txt 2>&1 &
BP=$!
sleep 6
perf record -F 499 -p $PID -o /tmp/bun.perf -- sleep 5 2>/dev/null
EV=""; for sc in sendto sendmsg writev write recvfrom recvmsg read epoll_wait epoll_pwait epoll_pwait2 epoll_ctl futex; do EV="$EV,syscalls:sys_enter_$sc"; done
perf stat -e "${EV#,}" -p $PID -o /tmp/bunstat.txt -- sleep 5 2>/dev/null
wait $BP; kill $PID
perf report -i /tmp/bun.perf --sort dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | sed 's/ *$//' | head -6
grep syscalls /tmp/bunstat.txt
grep -E "deliveries/s|server CPU s|deliveries/server" /tmp/bunprof.txt
