#!/usr/bin/env bash
# A data dir written by the base (leveled) server, opened by the new (universal) one.
set -u
work=$(mktemp -d)
sed -n '/^\[server\]/,/^TOML/p' /work/wt/events/bench/events.sh | sed '$d' | sed "s|\$port|7976|; s|\$work|$work|g" > $work/parley.toml
/tmp/h-events/base/parley serve --config $work/parley.toml > $work/log1 2>&1 &
pid=$!; sleep 3
/tmp/h-events/base/parley-bench hunt-20k --unix $work/parley.sock --duration 12 --drain 3 --no-progress > $work/b1 2>&1
grep -E "acked|audit clean" $work/b1 | head -2; echo "sst files: $(ls $work/data/store/*.sst 2>/dev/null | wc -l)"
kill -TERM $pid; wait $pid; echo "base exit $?"
/tmp/h-events/new/parley serve --config $work/parley.toml > $work/log2 2>&1 &
pid=$!; sleep 4
grep -iE "ready|error" $work/log2 | head -5
/tmp/h-events/base/parley-bench hunt-20k --unix $work/parley.sock --duration 5 --drain 3 --no-progress --run-id upgrade2 > $work/b2 2>&1
grep -E "acked|audit|leaderboard" $work/b2
curl -s -H "Authorization: Bearer demo-api-key-change-me" "http://127.0.0.1:7976/v1/history?ch=x&after=0&limit=1" | head -c 200; echo
kill -TERM $pid; wait $pid; echo "new exit $?"
rm -rf $work
