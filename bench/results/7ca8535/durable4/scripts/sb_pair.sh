#!/usr/bin/env bash
# sb_pair.sh A B ROUNDS OUT: two store_bench binaries' BM_EmbeddedPacedAppend (200
# appends/s, 10 channels, every append its own group commit) side by side, ROUNDS
# times; prints each round's writer_us (CPU of every thread but the bench's own, per
# append: the store's writer) and the median of B/A. Run under bench/worlds/prio.sh.
A=$1; B=$2; ROUNDS=${3:-5}; OUT=$4; mkdir -p $OUT
for r in $(seq 1 $ROUNDS); do
  L0=$(cut -d' ' -f1-3 /proc/loadavg)
  $A --benchmark_filter=Paced > $OUT/a-$r.txt 2>&1 & PA=$!
  $B --benchmark_filter=Paced > $OUT/b-$r.txt 2>&1 & PB=$!
  wait $PA $PB
  wa=$(grep -o "writer_us=[0-9.]*" $OUT/a-$r.txt | cut -d= -f2); wb=$(grep -o "writer_us=[0-9.]*" $OUT/b-$r.txt | cut -d= -f2)
  echo "round $r load $L0 -> $(cut -d' ' -f1-3 /proc/loadavg) | writer us/append A $wa B $wb | B/A $(echo "$wb $wa" | awk '{printf "%.3f", $1/$2}')" | tee -a $OUT/pairs.log
done
grep "^round" $OUT/pairs.log | awk '{print $NF}' | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "median B/A over %d rounds: %.3f\n", NR, m}' | tee -a $OUT/pairs.log
