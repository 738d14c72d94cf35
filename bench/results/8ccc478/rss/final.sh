#!/usr/bin/env bash
# final.sh BASE_BIN FINAL_BIN BENCH_BIN OUT: issue 12's idle RSS, main at the
# session's start against the final binary, in one run (every server at nice -15):
#  1. idle RSS, 5 starts each, interleaved (idle_pair.sh);
#  2. idle, then 10 s after one HTTP publish (after_publish.sh), 3 each;
#  3. RSS during 30 s of hunt-20k at 100,000 events/s without ids (load_rss.sh),
#     with the smaps table at 30 s and after the drain.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
base=$1; final=$2; bench=$3; out=$4
mkdir -p "$out"
echo "load before: $(uptime)" | tee "$out/summary.txt"
nice -n -15 bash "$here/idle_pair.sh" 5 base="$base" final="$final" | tee -a "$out/summary.txt"
for i in 1 2 3; do
  nice -n -15 bash "$here/after_publish.sh" base "$base" | tee -a "$out/summary.txt"
  nice -n -15 bash "$here/after_publish.sh" final "$final" | tee -a "$out/summary.txt"
done
if [ "${LOAD:-1}" = 1 ]; then
  bash "$here/load_rss.sh" base "$base" "$bench" "$out" | tee -a "$out/summary.txt"
  bash "$here/load_rss.sh" final "$final" "$bench" "$out" | tee -a "$out/summary.txt"
fi
echo "load after: $(uptime)" | tee -a "$out/summary.txt"
