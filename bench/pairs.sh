#!/usr/bin/env bash
# Paired compares of several Parley builds (issue 23's "paired runs against
# da8e19d"): each shape runs once per build per round, the order rotating each
# round so that neither side always runs first on a machine that drifts, and
# one line per run goes to OUT/pairs.txt (bench/pairs_summary.py reads it:
# medians and the ratio of each build's median to the first build's).
#
# usage: bench/pairs.sh BENCH OUT ROUNDS DURATION_S "name=parley-binary ..." SHAPE...
#   SHAPE: room200 room2000 durable200 broadcast1x world1x world5x
#   e.g. bench/pairs.sh build/tools/bench/parley-bench /tmp/p 3 30 \
#          "base=../base/build/src/server/parley new=build/src/server/parley" room2000 world5x
set -u
bench=$1 out=$2 rounds=$3 dur=$4 sides=($5); shift 5
mkdir -p "$out"
args_of() {
  case $1 in
    room200) echo "chat --ns room --conns 200 --rate 200";; room2000) echo "chat --ns room --conns 2000 --rate 2000";;
    durable200) echo "chat --conns 200";; broadcast1x) echo "broadcast";;
    world1x) echo "world";; world5x) echo "world --load-x 5";;
    *) echo "unknown shape $1" >&2; exit 2;;
  esac
}
n=${#sides[@]}
for r in $(seq 1 "$rounds"); do
  for s in "$@"; do
    for k in $(seq 0 $((n - 1))); do
      i=$(((k + r) % n)); side=${sides[$i]%%=*}; bin=${sides[$i]#*=}
      log="$out/$s.$side.$r.txt"
      load=$(cut -d' ' -f1 /proc/loadavg)
      "$bench" compare $(args_of "$s") --targets parley --parley-bin "$bin" --duration "$dur" \
        --threads 2 --no-progress >"$log" 2>&1
      row=$(grep -E '^  parley ' "$log" | tail -1)
      echo "$s $side round $r load $load :: $row" | tee -a "$out/pairs.txt"
    done
  done
done
