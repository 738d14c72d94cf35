#!/usr/bin/env bash
# Second run of the broadcast/world compares with the Node `ws` peer beside Bun and floor-tick.
set -u
C=/work/wt/lead; OUT=$1; mkdir -p "$OUT"
P=$C/build/src/server/parley; B=$C/build/tools/bench/parley-bench
log() { echo "== $(date -u +%H:%M:%S) $1 load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/sequence.log"; }
for shape in broadcast world; do for x in 1 5; do
  name=$shape-${x}x-run2; log $name
  nice -n -15 "$B" compare $shape --load-x $x --targets parley,bun,floor-tick,node-ws --duration 15 --threads 2 \
    --parley-bin "$P" --peers-dir "$C/bench" --no-progress --json "$OUT/$name.json" > "$OUT/$name.txt" 2> "$OUT/$name.err"
done; done
log done
