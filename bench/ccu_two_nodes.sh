#!/usr/bin/env bash
# Issue 10's connection figure: 20,002 connections held for 300 s across two Parley
# nodes (10,001 each) that share one valkey store (a 3-master redis-server cluster
# on loopback). A process may hold at most 20,000 files here, so each node has its
# own parley-bench process (`ccu-soak`: channels of 20, light chat traffic, an app
# `ping` every 20 s per connection, and the server's WebSocket pings every
# heartbeat_ms answered by the client, PROTOCOL.md "heartbeat"). Each generator
# uses its own channels (disjoint run ids), so no channel spans the two nodes.
# Everything starts here and stops by itself; the end prints, per node and in
# total: connections ready, held at the end of the load, disconnects, failed
# (re)connects, the audit verdict, and each process's CPU seconds.
#
# usage: bench/ccu_two_nodes.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (300), PER_NODE (10001), RAMP (60), RATE (msgs/s per node, 100),
#        HEARTBEAT_MS (25000, the server default)
#   e.g. bench/ccu_two_nodes.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/ccu-20k
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bench_init "$@"
secs=${SECS:-300}
per_node=${PER_NODE:-10001}
ramp=${RAMP:-60}
rate=${RATE:-100}
heartbeat=${HEARTBEAT_MS:-25000}

servers=()
bench_stop() {
  for s in "${servers[@]}"; do kill -TERM "$s" 2>/dev/null || true; done
  for s in "${servers[@]}"; do wait "$s" 2>/dev/null || true; done
}

echo "ccu_two_nodes.sh: 2 nodes x $per_node connections, $secs s, commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ)" | tee "$out/summary.txt"
echo "uptime before: $(uptime)" | tee -a "$out/summary.txt"

base=$(vk_free_ports 31600 3)
for i in 0 1 2; do vk_start_node "$work/redis-$i" $((base + i)); done
vk_create_cluster $base $((base + 1)) $((base + 2))
nodes="127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))"

ports=()
for n in 0 1; do
  port=$(vk_free_ports $((8010 + n * 10)) 1)
  parley_config "$work/node$n.toml" "$port" valkey "$work/data$n" "$nodes" true
  sed -i "/^max_connections = 30000/a heartbeat_ms = $heartbeat" "$work/node$n.toml"
  cp "$work/node$n.toml" "$out/node$n.toml"
  servers+=("$(parley_start "$parley" "$work/node$n.toml" "$work/node$n.log")")
  ports+=("$port")
done
echo "nodes: ${servers[0]} on ${ports[0]}, ${servers[1]} on ${ports[1]}; redis on $base..$((base + 2))" | tee -a "$out/summary.txt"

gens=()
for n in 0 1; do
  run_nice "$bench" ccu-soak --target "127.0.0.1:${ports[$n]}" --conns "$per_node" --rate "$rate" \
    --duration "$secs" --ramp-up "$ramp" --run-id "ccu$n-$$" --no-progress \
    --server-pid "${servers[$n]}" --json "$out/gen$n.json" > "$out/gen$n.txt" 2>&1 &
  gens+=($!)
done
# Server-side counts half-way through the hold (connections past hello, per node).
sleep $((ramp + 1 + secs / 2))
for n in 0 1; do
  curl -sf "http://127.0.0.1:${ports[$n]}/metrics" | grep -E '^parley_connections\{' > "$out/node$n.mid.txt" || true
done
status=0
for g in "${gens[@]}"; do wait "$g" || status=$?; done

for n in 0 1; do cp "$work/node$n.log" "$out/node$n.log"; done
cpu_redis=""
for i in 0 1 2; do cpu_redis="$cpu_redis redis-$i $(cpu_s "$(vk_pid "$work/redis-$i")") s;"; done
total_ready=0 total_held=0 total_disc=0 total_failed=0
{
  echo
  for n in 0 1; do
    c=$(tr -d ' \n' < "$out/gen$n.json")
    num() { echo "$c" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }
    ready=$(num conn_ready) held=$(num conns_held) disc=$(num disconnects)
    failed=$(( $(num conn_failed) + $(num reconnect_failed) ))
    total_ready=$((total_ready + ready)) total_held=$((total_held + held))
    total_disc=$((total_disc + disc)) total_failed=$((total_failed + failed))
    echo "node $n: ready $ready, held at end of load $held, disconnects $disc, failed (re)connects $failed," \
         "server CPU s $(cpu_s "${servers[$n]}"), mid-run $(tr '\n' ' ' < "$out/node$n.mid.txt")"
    grep -E "^  ack |accepted|load generator CPU s|server peak RSS|audit:|verdict" "$out/gen$n.txt" | sed 's/^/  /'
  done
  echo "total: ready $total_ready, held $total_held, disconnects $total_disc, failed (re)connects $total_failed"
  echo "redis CPU s whole run:$cpu_redis"
  echo "uptime after: $(uptime)"
} | tee -a "$out/summary.txt"
exit "$status"
