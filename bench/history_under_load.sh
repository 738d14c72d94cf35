#!/usr/bin/env bash
# What `history` costs the other clients: a chat load (parley-bench chat) with and
# without a client that asks for 1,000 messages of history in a loop (one request
# in flight, bench/history_loop.mjs), against a fresh server with the embedded
# store. Prints the chat's ack latency row and each process's CPU seconds.
#
# usage: bench/history_under_load.sh PARLEY_BIN BENCH_BIN with|without [SECONDS]
#   env: CONNS (1000), RATE (chat msg/s, 1000), HIST_RATE (history requests/s, 20;
#   0: back to back)
#   e.g. bench/history_under_load.sh build/src/server/parley \
#          build/tools/bench/parley-bench with 30
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
parley="$1"
bench="$2"
mode="$3"
secs="${4:-30}"
port="${PARLEY_HIST_PORT:-7970}"
conns="${CONNS:-1000}"
rate="${RATE:-1000}"
hist_rate="${HIST_RATE:-20}"

work="$(mktemp -d)"
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT

cat > "$work/parley.toml" <<CONF
[server]
listen = "127.0.0.1:$port"
store = "embedded"
data_dir = "$work/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
publish_per_sec = 0
publish_per_conn_sec = 0
CONF

"$parley" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 200); do
  grep -q "parley ready" "$work/server.log" && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
grep -q "parley ready" "$work/server.log" || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

if [ "$mode" = with ]; then
  # Fill the channel (1,000 messages), then loop history through the whole load.
  node "$root/bench/history_loop.mjs" --port "$port" --fill 1000 --seconds 0 > /dev/null
  node "$root/bench/history_loop.mjs" --port "$port" --fill 0 --seconds "$((secs + 4))" --rate "$hist_rate" \
    > "$work/history.json" &
  looper=$!
fi

"$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size 20 --rate "$rate" \
  --duration "$secs" --ramp-up 2 --no-progress --server-pid "$server" > "$work/bench.out" 2>&1 || true
grep -E "^  ack |accepted|load generator CPU s|server CPU s|msgs/s" "$work/bench.out" || cat "$work/bench.out"
if [ "$mode" = with ]; then
  wait "$looper"
  echo "history loop: $(cat "$work/history.json")"
fi
