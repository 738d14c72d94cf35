#!/usr/bin/env bash
# multi.sh OUT ROUNDS RATE CONNS DUR "label=dir label=dir ..." [extra bench flags]
# Every variant once per round (the order rotates each round): a fresh events_keep.sh run of hunt-20k
# at nice -15; per run the bench output, the server log (RocksDB write stops), per-thread CPU,
# smaps_rollup every 0.5 s.
set -u
out=$1; rounds=$2; rate=$3; conns=$4; dur=$5; vars=($6); shift 6
mkdir -p $out; here=$(cd "$(dirname "$0")" && pwd); cd "${REPO:-/work/main}"
n=${#vars[@]}
for r in $(seq $rounds); do
  for k in $(seq 0 $((n-1))); do
    v=${vars[$(( (k + r - 1) % n ))]}
    label=${v%%=*}; d=${v#*=}
    f=$out/$label-$r.txt
    KEEP_LOG=$out/$label-$r.server.log PARLEY_EVENTS_PORT=${PORT:-7981} PARLEY_BIN=$d/parley PARLEY_BENCH_BIN=${BENCH:-/tmp/events-base/parley-bench} \
      nice -n -15 bash $here/events_keep.sh hunt-20k --rate $rate --conns $conns --duration $dur --drain 10 "$@" > $f 2>&1 &
    bpid=$!
    sp=""
    for i in $(seq 100); do sp=$(grep -o 'server pid [0-9]*' $f 2>/dev/null | awk '{print $3}'); [ -n "$sp" ] && break; sleep 0.2; done
    bash $here/threads.sh $sp $out/$label-$r.threads &
    ( while kill -0 $sp 2>/dev/null; do
        awk '/^Rss:/{r=$2} /^Anonymous:/{a=$2} END{if (r) printf "rss %d anon %d file %d\n", r, a, r-a}' /proc/$sp/smaps_rollup 2>/dev/null
        sleep 0.5; done > $out/$label-$r.mem ) &
    wait $bpid
    sleep 1
    echo "$label-$r: $(grep -o 'acked [0-9]* ([0-9]*/s)' $f) $(grep 'group 0' $f | grep -o 'p50.*ms p99 [0-9.]* ms') | $(grep -o 'cpu [0-9.]* s over' $f) | $(grep -o 'peak [0-9.]* MiB' $f) | max anon $(sort -k4 -n $out/$label-$r.mem | tail -1 | awk '{printf "%.1f MiB", $4/1024}') | stops $(grep -c 'Stopping writes' $out/$label-$r.server.log) | $(tr '\n' ' ' < $out/$label-$r.threads) | $(grep -o 'load average.*' $f | head -1)"
  done
done
