#!/usr/bin/env bash
# load_rss.sh LABEL BIN BENCH OUT: one fresh server on the events config of
# bench/events.sh (embedded store, topic hunt of 16 partitions, leaderboard),
# idle RSS 2 s after ready, then parley-bench hunt-20k at 100,000 events/s without
# ids for 30 s (8 connections, drain 15 s) over the Unix socket; the smaps table
# is taken at the end of the load (before the drain ends) and after it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
label=$1; bin=$2; bench=$3; out=$4
work=$(mktemp -d); mkdir -p "$out"
cat > "$work/parley.toml" <<TOML
[server]
listen = "127.0.0.1:7973"
unix_listen = "$work/parley.sock"
store = "embedded"
data_dir = "$work/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key-change-me"
max_connections = 50000
[tenants.demo.topics.hunt]
partitions = 16
retention = 1000000
[tenants.demo.leaderboards.hunt]
topic = "hunt"
type = "score"
member = "player"
score = "points"
agg = "sum"
round = "round"
top = 10
interval_ms = 200
TOML
echo "== $label load before: $(uptime)" | tee "$out/$label.txt"
nice -n -15 "$bin" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "parley ready" "$work/server.log" && break; sleep 0.1; done
sleep 2
echo "idle rss $(awk '/^VmRSS/{print $2}' /proc/$server/status) KiB" | tee -a "$out/$label.txt"
( sleep 30; python3 "$here/smaps_table.py" $server > "$out/$label-smaps-at-30s.txt" ) &
snap=$!
nice -n -15 "$bench" hunt-20k --unix "$work/parley.sock" --server-pid "$server" --no-progress \
  --rate 100000 --conns 8 --no-ids --duration 30 --drain 15 >> "$out/$label.txt" 2>&1 || true
wait $snap
python3 "$here/smaps_table.py" $server > "$out/$label-smaps-after.txt"
echo "server rss after $(awk '/^VmRSS/{print $2}' /proc/$server/status) KiB" | tee -a "$out/$label.txt"
echo "load after: $(uptime)" | tee -a "$out/$label.txt"
kill -TERM $server; wait $server 2>/dev/null || true
rm -rf "$work"
grep -E "acked|server:|rss|RSS" "$out/$label.txt" | head -12
