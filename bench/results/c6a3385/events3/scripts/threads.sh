#!/usr/bin/env bash
# threads.sh PID OUT: every second, per-thread CPU seconds (utime+stime) of PID summed by thread name; keeps each tid's last seen value.
pid=$1; out=$2
declare -A val nm
while kill -0 $pid 2>/dev/null; do
  for t in /proc/$pid/task/*; do
    line=$(cat $t/stat 2>/dev/null) || continue
    [ -z "$line" ] && continue
    tid=${t##*/}
    rest=${line#*) }
    set -- $rest
    val[$tid]=$(( ${12} + ${13} ))
    nm[$tid]=$(cat $t/comm 2>/dev/null || echo "?")
  done
  for tid in "${!val[@]}"; do echo "${nm[$tid]} ${val[$tid]}"; done | awk '{c[$1]+=$2} END{for(k in c) printf "%s %.2f\n", k, c[k]/100}' | sort > $out.tmp && mv $out.tmp $out
  sleep 1
done
