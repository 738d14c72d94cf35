#!/usr/bin/env bash
# sys.sh OUT LABEL BINDIR RATE CONNS: syscalls and context switches of the server over 10 s mid-run
set -u
out=$1; label=$2; bindir=$3; rate=$4; conns=$5; shift 5
mkdir -p $out; cd /work/wt/events
PARLEY_BIN=$bindir/parley PARLEY_BENCH_BIN=/tmp/h-events/base/parley-bench \
  nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration 25 --drain 5 "$@" > $out/$label.txt 2>&1 &
bpid=$!
for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $out/$label.txt 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
sleep 8
perf stat -x, -e 'syscalls:sys_enter_futex,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_pread64,context-switches,task-clock' -p $sp -- sleep 10 2> $out/$label.sys > /dev/null
wait $bpid
echo "== $label $(grep -o 'acked [0-9]* ([0-9]*/s)' $out/$label.txt)"; awk -F, '{printf "%s=%s ", $3, $1} END{print ""}' $out/$label.sys
