#!/usr/bin/env bash
# ab.sh BASE NEW OUT [runs] [compare args...]: interleaved compares of two parley
# binaries (parley target only), at nice -15; prints each run and the medians.
set -uo pipefail
BASE=$1; NEW=$2; OUT=$3; RUNS=${4:-2}; shift 4
B=${BENCH:-/tmp/deliv/bins/parley-bench}
mkdir -p "$OUT"
for i in $(seq 1 "$RUNS"); do
  for which in base new; do
    bin=$BASE; [ $which = new ] && bin=$NEW
    name=$which-$i
    echo "== $(date -u +%H:%M:%S) $name load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"
    nice -n -15 "$B" compare "$@" --targets parley --parley-bin "$bin" --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
    grep -E "^ *parley " "$OUT/$name.txt" | tail -1 | tee -a "$OUT/sequence.log"
  done
done
echo "== $(date -u +%H:%M:%S) end load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"
for which in base new; do
  awk -v w=$which '$1=="parley" {print $3, $4, $6}' $(ls "$OUT"/$which-*.txt) | sort -n | awk -v w=$which '{c[NR]=$1; d[NR]=$2; p[NR]=$3} END {m=int((NR+1)/2); printf "%s median of %d: srv CPU s %s, deliv/CPU-s %s (sorted by CPU), p99 %s ms\n", w, NR, c[m], d[m], p[m]}' | tee -a "$OUT/sequence.log"
done
