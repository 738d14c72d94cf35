#!/usr/bin/env bash
# ab_solo.sh BASE NEW OUT ROUNDS [bench args]: one server at a time (as `compare` runs
# them), alternating base and new, durable chat 200 (prof.sh without perf); prints
# each run's server CPU and deliveries per CPU-s.
set -u
BASE=$1; NEW=$2; OUT=$3; ROUNDS=$4; shift 4
for r in $(seq 1 $ROUNDS); do
  for side in base new; do
    bin=$BASE; [ $side = new ] && bin=$NEW
    PROF=none bash "$(dirname "$0")/prof.sh" $bin ${NS:-chat} $OUT/round-$r/$side "$@" | sed "s/^/round $r $side /" | tee -a $OUT/ab.log
  done
done
