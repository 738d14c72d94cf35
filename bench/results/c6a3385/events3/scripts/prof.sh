#!/usr/bin/env bash
# prof.sh OUT LABEL BINDIR RATE CONNS [extra bench flags]: one events.sh run (30 s) with
# perf record -g (10 s), syscall counts (8 s), per-thread CPU, /metrics before the drain.
set -u
out=$1; label=$2; bindir=$3; rate=$4; conns=$5; shift 5
mkdir -p $out; cd "${REPO:-/work/main}"
port=${PORT:-7981}
PARLEY_EVENTS_PORT=$port PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration ${DUR:-30} --drain 10 "$@" > $out/$label.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/$label.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
bash $(dirname "$0")/threads.sh $sp $out/$label.threads &
sleep 6
if [ -n "${PERF:-1}" ]; then
perf record -g -F 299 -p $sp -o $out/$label.perf.data -- sleep 8 > /dev/null 2>&1
fi
perf stat -x, -e 'syscalls:sys_enter_futex,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_pread64,syscalls:sys_enter_pwrite64,syscalls:sys_enter_fdatasync,syscalls:sys_enter_madvise,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_brk,context-switches,task-clock' -p $sp -- sleep 8 2> $out/$label.sys > /dev/null
curl -s http://127.0.0.1:$port/metrics > $out/$label.metrics
wait $bpid
sleep 1
echo "== $label"; grep -E 'acked|group 0|server:|load|push intervals' $out/$label.txt; cat $out/$label.threads | tr '\n' ' '; echo
awk -F, '{printf "%s=%s ", $3, $1} END{print ""}' $out/$label.sys
