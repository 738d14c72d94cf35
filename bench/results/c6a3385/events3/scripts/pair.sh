#!/usr/bin/env bash
# pair.sh OUT ROUNDS RATE CONNS DUR BASE_DIR NEW_DIR [extra bench flags]
# Base and new servers (BASE_DIR/parley, NEW_DIR/parley) alternately in one script,
# ROUNDS rounds (the order flips every round), each a fresh bench/events.sh run of
# hunt-20k at RATE events/s for DUR s at nice -15, driven by the base's parley-bench.
# Per run: the bench's output, the server's syscalls and context switches over 8 s
# from 6 s into the run (perf stat), its per-thread CPU. Medians: summarize.py.
set -u
out=$1; rounds=$2; rate=$3; conns=$4; dur=$5; base=$6; new=$7; shift 7
mkdir -p $out
here=$(cd "$(dirname "$0")" && pwd)
cd "${REPO:-/work/main}"
bench=${BENCH:-/tmp/events-base/parley-bench}
for r in $(seq $rounds); do
  if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for label in $order; do
    dir=$base; [ $label = new ] && dir=$new
    f=$out/$label-$r.txt
    PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$dir/parley PARLEY_BENCH_BIN=$bench \
      nice -n -15 bash bench/events.sh hunt-20k --rate $rate --conns $conns --duration $dur --drain 10 "$@" > $f 2>&1 &
    bpid=$!
    sp=""
    for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $f 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
    bash $here/threads.sh $sp $out/$label-$r.threads &
    sleep 6
    perf stat -x, -e 'syscalls:sys_enter_futex,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_pread64,context-switches,task-clock' -p $sp -- sleep 8 2> $out/$label-$r.sys > /dev/null
    wait $bpid
    sleep 1
    echo "$label-$r: $(grep -o 'acked [0-9]* ([0-9]*/s)' $f) $(grep 'group 0' $f | grep -o 'p50.*') | $(grep -o 'cpu [0-9.]* s over [0-9.]* s' $f) | $(grep -o 'peak [0-9.]* MiB' $f) | $(grep -o 'load average.*' $f | head -1) -> $(grep -o 'load average.*' $f | tail -1)"
  done
done
python3 $here/summarize.py $out
