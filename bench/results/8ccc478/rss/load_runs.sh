#!/usr/bin/env bash
# load_runs.sh BIN BENCH SECS: text residency of BIN at idle, then SECS into a 100k/s no-ids hunt-20k load
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin=$1; bench=$2; secs=${3:-20}; work=$(mktemp -d)
sed -n '/^cat > "\$work\/parley.toml" <<TOML/,/^TOML/p' $here/load_rss.sh | sed '1d;$d' | sed "s|\$work|$work|g" > "$work/parley.toml"
nice -n -15 "$bin" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "parley ready" "$work/server.log" && break; sleep 0.1; done
sleep 2; echo "idle: $(python3 $here/text_runs.py $server $(basename $bin))"
nice -n -15 "$bench" hunt-20k --unix "$work/parley.sock" --server-pid "$server" --no-progress --rate 100000 --conns 8 --no-ids --duration $((secs+5)) --drain 2 > "$work/bench.txt" 2>&1 &
b=$!
for t in 1 3 $secs; do sleep $((t==1?1:t==3?2:secs-3)); echo "load +$t s: $(python3 $here/text_runs.py $server $(basename $bin))"; done
wait $b || true
kill -TERM $server; wait $server 2>/dev/null || true; rm -rf "$work"
