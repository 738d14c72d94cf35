#!/bin/bash
# Paired cost of the valkey append script, main's vs this branch's, on one
# redis-server: usec_per_call of EVALSHA (redis INFO commandstats) per round.
# Usage: run.sh OLD_COMMIT NEW_COMMIT (from the repository: extracts each
# commit's kAppend from src/store/valkey/scripts.cc into /tmp/modlog_bench).
set -e
repo=$(git rev-parse --show-toplevel)
mkdir -p /tmp/modlog_bench
for pair in "old $1" "new $2"; do
  set -- $pair
  git -C "$repo" show "$2:src/store/valkey/scripts.cc" |
    python3 "$repo/bench/results/7eec934/append_script/extract.py" > /tmp/modlog_bench/$1.lua
done
cd /tmp/modlog_bench
P=6399
redis-server --port $P --bind 127.0.0.1 --daemonize yes --dir /tmp/modlog_bench --pidfile /tmp/modlog_bench/pid --save "" --appendonly no
sleep 0.5
OLD=$(redis-cli -p $P SCRIPT LOAD "$(cat old.lua)")
NEW=$(redis-cli -p $P SCRIPT LOAD "$(cat new.lua)")
for round in 1 2 3 4 5; do
  for v in old new; do
    sha=$OLD; [[ $v == new ]] && sha=$NEW
    redis-cli -p $P FLUSHALL >/dev/null; redis-cli -p $P CONFIG RESETSTAT >/dev/null
    redis-benchmark -p $P -n 100000 -c 4 -P 16 -r 100000000 -q EVALSHA $sha 6 '{b.p1}:s:c' '{b.p1}:h:c' '{b.p1}:d:c' '{b.p1}:z:c' '{b.p1}:w' '{b.p1}:e:c' 0 1764460800000 u1 m__rand_int__ '{"t":"hello world, a chat line"}' 1000 100 120000 chat:c 100000 "" 0 "" >/dev/null
    echo "$round $v $(redis-cli -p $P INFO commandstats | grep cmdstat_evalsha | sed 's/.*usec_per_call=\([0-9.]*\).*/\1/')"
  done
done
redis-cli -p $P SHUTDOWN NOSAVE >/dev/null 2>&1 || true
