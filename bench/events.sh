#!/usr/bin/env bash
# The events figures of issue 12 in one command: starts a fresh `parley serve`
# (embedded store, topic "hunt" of 16 partitions, leaderboard "hunt" summing
# body.points per body.player per body.round, pushed every 200 ms), runs
# parley-bench against it over the Unix socket with --server-pid, and stops it.
# Extra arguments go to parley-bench (e.g. --duration 60 --rate 60000 or
# --redis /usr/bin/redis-server for the Redis Streams run after Parley's).
# Prints the load average before and after; the idle RSS of the fresh server
# before the load.
#
# usage: bench/events.sh [PRESET] [parley-bench flags...]
#   PRESET defaults to hunt-20k; PARLEY_BIN / PARLEY_BENCH_BIN override the binaries
#   (defaults: build/src/server/parley, build/tools/bench/parley-bench);
#   KEEP_LOG=FILE keeps the server's log there (RocksDB's "Stopping writes" lines);
#   TOPIC_LOG=segment|rocksdb sets [server] topic_log (default: the server's: segment on its fresh data directory).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
preset="${1:-hunt-20k}"
[ $# -gt 0 ] && shift
parley="${PARLEY_BIN:-$root/build/src/server/parley}"
bench="${PARLEY_BENCH_BIN:-$root/build/tools/bench/parley-bench}"
port="${PARLEY_EVENTS_PORT:-7970}"

work="$(mktemp -d)"
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null
      if [ -n "${KEEP_LOG:-}" ]; then cp "$work/server.log" "$KEEP_LOG"; fi; rm -rf "$work"' EXIT

topic_log=""
[ -z "${TOPIC_LOG:-}" ] || topic_log="topic_log = \"$TOPIC_LOG\""
cat > "$work/parley.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
unix_listen = "$work/parley.sock"
store = "embedded"
data_dir = "$work/data"
$topic_log
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

echo "load before: $(uptime)"
"$parley" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "parley ready" "$work/server.log" && break
  sleep 0.1
done
sleep 2
echo "server pid $server, idle rss $(awk '/^VmRSS/{print $2}' /proc/$server/status) KiB"
status=0
"$bench" "$preset" --unix "$work/parley.sock" --server-pid "$server" --no-progress "$@" || status=$?
echo "server rss after $(awk '/^VmRSS/{print $2}' /proc/$server/status) KiB"
echo "load after: $(uptime)"
exit $status
