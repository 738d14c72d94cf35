#!/usr/bin/env bash
# chat6k_ab.sh BASE NEW OUT [DURATION] [ORDER]: chat6k.sh against BASE and NEW one
# after the other, in ORDER (default "base new new base"), then a summary line per
# run: client ack p50/p99, server stage means (queue_wait, append, ack) and p99s.
set -u
BASE=$1; NEW=$2; OUT=$3; DUR=${4:-60}; ORDER=${5:-base new new base}
i=0
for side in $ORDER; do
  i=$((i+1)); bin=$BASE; [ $side = new ] && bin=$NEW
  bash "$(dirname "$0")/chat6k.sh" $bin $OUT/$i-$side $DUR > /dev/null 2>&1
  d=$OUT/$i-$side
  ack=$(awk '$1=="ack" {print $2"/"$4; exit}' $d/chat-6k.txt)
  st=$(awk -F'|' '$2 ~ /queue_wait|append|ack/ {gsub(/ /,"",$2); gsub(/ /,"",$4); gsub(/ /,"",$6); printf "%s %s/%s ", $2, $4, $6}' $d/stages.txt)
  cpu=$(awk '/server CPU s \(load\)/ {print $5}' $d/chat-6k.txt); gen=$(awk '/load generator CPU s/ {print $5}' $d/chat-6k.txt)
  echo "$i $side $(head -1 $d/load.txt | cut -d' ' -f2-) | client ack p50/p99 $ack | server mean/p99 ms: $st| server CPU $cpu gen $gen | $(grep -c 'verdict: PASS' $d/chat-6k.txt) pass" | tee -a $OUT/summary.log
done
