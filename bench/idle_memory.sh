#!/usr/bin/env bash
# Memory of idle connections: starts a fresh `parley serve` (embedded store),
# reads its VmRSS idle, opens N WebSocket connections with parley-bench (hello,
# join channels of 20, heartbeats, one message per channel: the state a real idle
# player is in), reads VmRSS again while all are held, and prints both and the
# bytes per connection above the idle process: of VmRSS, and of RssAnon alone.
# The anonymous figure is the connections' own memory. The VmRSS one also charges
# them the code pages their first messages fault back in (the server gives back
# the pages only start-up used 1 s after ready: several MiB of the binary and its
# libraries map back as code runs again), so it grows as the idle baseline shrinks.
#
# usage: bench/idle_memory.sh [CONNS] [PARLEY_BIN] [PARLEY_BENCH_BIN]
#   defaults: 5000, build/src/server/parley, build-bench/tools/bench/parley-bench
#   env: PARLEY_MEM_PORT (7990), IDLE_HOLD_S (12), IDLE_RAMP_S (4)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
conns="${1:-5000}"
parley="${2:-$root/build/src/server/parley}"
bench="${3:-$root/build-bench/tools/bench/parley-bench}"
port="${PARLEY_MEM_PORT:-7990}"
hold_s="${IDLE_HOLD_S:-12}"  # seconds the connections are held (RSS read 1 s before the end)
ramp_s="${IDLE_RAMP_S:-4}"   # seconds over which they connect

work="$(mktemp -d)"
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT

cat > "$work/parley.toml" <<EOF
[server]
listen = "127.0.0.1:$port"
tcp_listen = "127.0.0.1:$((port + 1))"
store = "embedded"
data_dir = "$work/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
max_connections = 50000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
EOF

rss_kib() { awk -v f="${2:-VmRSS}" '$1 == f":" {print $2}' "/proc/$1/status"; }

"$parley" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "parley ready" "$work/server.log" && break
  sleep 0.1
done
grep -q "parley ready" "$work/server.log" || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
sleep 2  # past the start-up page release (1 s after ready)
idle=$(rss_kib "$server")
idle_anon=$(rss_kib "$server" RssAnon)

"$bench" soak --target "127.0.0.1:$port" --conns "$conns" --channel-size 20 --rate 0.001 \
  --duration "$hold_s" --ramp-up "$ramp_s" --ping-s 30 --no-progress --no-history \
  > "$work/bench.out" 2>&1 &
load=$!
sleep $((ramp_s + hold_s))  # connect, settle 1 s, then 1 s before the hold ends
held=$(rss_kib "$server")
held_anon=$(rss_kib "$server" RssAnon)
wait "$load" || { cat "$work/bench.out"; exit 1; }
grep -q "connections held at end *$conns " "$work/bench.out" || {
  echo "not every connection was held:" >&2
  grep "connections held" "$work/bench.out" >&2
  exit 1
}

echo "connections $conns"
echo "idle VmRSS KiB $idle"
echo "VmRSS with connections KiB $held"
echo "bytes per connection above idle $(((held - idle) * 1024 / conns))"
echo "idle RssAnon KiB $idle_anon"
echo "RssAnon with connections KiB $held_anon"
echo "anonymous bytes per connection above idle $(((held_anon - idle_anon) * 1024 / conns))"
