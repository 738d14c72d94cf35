#!/bin/bash
# oncpu.sh FLAGS: a floor under room-200 load; over the same 6 s window: perf task-clock,
# the scheduler's runtime (schedstat) and on-CPU wall time from sched_switch (-a),
# for the floor and for the generator.
P=$((30000+RANDOM%10000))
/tmp/h-uring/parley-floor $P 0 $1 > /dev/null 2>&1 & S=$!
sleep 0.3
/tmp/h-uring/parley-bench chat --ns room --conns 200 --rate 200 --duration 14 --no-history --target 127.0.0.1:$P --no-progress --server-pid $S > /tmp/h-uring/oc.txt 2>&1 & B=$!
sleep 4
ss() { cat /proc/$1/task/*/schedstat | awk '{s+=$1} END {printf "%.0f\n", s}'; }
b=$(ss $S); g0=$(ss $B)
perf stat -x, -e task-clock -p $S -o /tmp/h-uring/oc.perf -- sleep 6 & PS=$!
perf record -q -e sched:sched_switch -a -o /tmp/h-uring/oc.data -- sleep 6 2>/dev/null
wait $PS; d=$(ss $S); g1=$(ss $B)
GT=$(ls /proc/$B/task | tr '\n' ' ')
wait $B; kill $S
echo "flags '$1': floor: perf task-clock $(awk -F, '/task-clock/ {print $1}' /tmp/h-uring/oc.perf) ms, schedstat $(( (d-b)/1000000 )) ms; generator schedstat $(( (g1-g0)/1000000 )) ms"
perf script -i /tmp/h-uring/oc.data -F time,trace 2>/dev/null | awk -v pid=$S -v gt="$GT" '
BEGIN { n=split(gt, a, " "); for (i=1;i<=n;i++) g[a[i]]=1 }
{ t=$1; sub(":","",t); t+=0;
  match($0, /prev_pid=[0-9]+/); pp=substr($0, RSTART+9, RLENGTH-9);
  match($0, /next_pid=[0-9]+/); np=substr($0, RSTART+9, RLENGTH-9);
  if (pp in since) { tot[(pp==pid)?"floor":"gen"] += t - since[pp]; delete since[pp] }
  if (np==pid || (np in g)) since[np]=t
} END { printf "on-CPU wall time by sched_switch: floor %.1f ms, generator %.1f ms\n", tot["floor"]*1000, tot["gen"]*1000 }'
