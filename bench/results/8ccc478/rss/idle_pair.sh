#!/usr/bin/env bash
# idle_pair.sh N LABEL=BIN [LABEL=BIN ...]: starts each binary N times, interleaved
# (fresh data dir, demo tenant on the embedded store, no connections), reads
# VmRSS/RssAnon/RssFile SETTLE s (default 2) after "parley ready", prints each start and the medians (KiB).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
n=$1; shift
sync
declare -A all
for i in $(seq "$n"); do
  for lb in "$@"; do
    label=${lb%%=*}; bin=${lb#*=}
    pid=$("$here/start_idle.sh" "$bin" "/tmp/rss-idle-$label" 7971)
    v=$(awk '/^(VmRSS|RssAnon|RssFile):/{printf "%s ", $2}' /proc/$pid/status)
    echo "$label run $i: VmRSS RssAnon RssFile = $v"
    all[$label]+="$v"$'\n'
    kill -TERM "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  done
done
for lb in "$@"; do
  label=${lb%%=*}
  printf '%s' "${all[$label]}" | python3 -c "
import sys, statistics
rows=[list(map(int,l.split())) for l in sys.stdin if l.strip()]
m=[statistics.median(c) for c in zip(*rows)]
print('$label median of', len(rows), ': VmRSS %.1f MiB, RssAnon %.1f MiB, RssFile %.1f MiB' % tuple(x/1024 for x in m))"
done
