#!/usr/bin/env bash
# Issue 10's online scale-up: a 4th master joins a 3-master redis-server cluster and
# takes a quarter of the slots while parley-bench's `chat` scenario runs against
# Parley on store = "valkey" (cluster = true). Counted at the end:
#   connections lost      the bench's disconnects (each reconnects and joins with since)
#   rejections retried    pubs answered `unavailable` (MOVED, TRYAGAIN, ...) and sent again
#                         by the client after retry_ms with the same id
#   acknowledged lost     the bench's zero-loss audit (every member got every acked seq,
#                         history has every acked message)
# The cluster commands are the ones docs/operations.md gives for adding a master:
#   redis-cli --cluster add-node NEW EXISTING
#   redis-cli --cluster rebalance EXISTING --cluster-use-empty-masters
#
# usage: bench/scaleup.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (load seconds, 120), WARM (seconds of load before add-node, 15),
#        CONNS (1000), RATE (msgs/s, 1000), CHANNEL (members per channel, 20),
#        FSYNC (everysec)
#   e.g. bench/scaleup.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/scaleup
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bench_init "$@"
secs=${SECS:-120}
warm=${WARM:-15}
conns=${CONNS:-1000}
rate=${RATE:-1000}
channel=${CHANNEL:-20}
fsync=${FSYNC:-everysec}

server=""
bench_stop() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null
}
log() { echo "[$(date -u +%T)] $*" | tee -a "$out/timeline.txt"; }
: > "$out/timeline.txt"

base=$(vk_free_ports 31500 4)
p=($base $((base + 1)) $((base + 2)) $((base + 3)))
for i in 0 1 2; do vk_start_node "$work/redis-$i" "${p[$i]}" "$fsync"; done
vk_create_cluster "${p[0]}" "${p[1]}" "${p[2]}"
log "3-master cluster up on ${p[0]} ${p[1]} ${p[2]}"

port=$(vk_free_ports 7990 1)
parley_config "$work/parley.toml" "$port" valkey "$work/data" \
  "127.0.0.1:${p[0]},127.0.0.1:${p[1]},127.0.0.1:${p[2]}" true
cp "$work/parley.toml" "$out/parley.toml"
server=$(parley_start "$parley" "$work/parley.toml" "$work/parley.log")
log "parley pid $server on 127.0.0.1:$port, uptime: $(uptime)"

run_nice "$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size "$channel" \
  --rate "$rate" --duration "$secs" --ramp-up 5 --drain 10 --retry-max 50 \
  --server-pid "$server" --json "$out/chat.json" > "$out/chat.txt" 2> "$out/chat.progress" &
bench_pid=$!

sleep $((warm + 6))  # ramp-up 5 s + 1 s settle, then WARM seconds of load
vk_start_node "$work/redis-3" "${p[3]}" "$fsync"
log "add-node 127.0.0.1:${p[3]}"
redis-cli --cluster add-node "127.0.0.1:${p[3]}" "127.0.0.1:${p[0]}" > "$out/add-node.txt" 2>&1
vk_wait_ok "${p[@]}"
log "add-node done, cluster_state ok; rebalance starts"
redis-cli --cluster rebalance "127.0.0.1:${p[0]}" --cluster-use-empty-masters > "$out/rebalance.txt" 2>&1
log "rebalance done"
redis-cli -p "${p[0]}" CLUSTER SHARDS > /dev/null 2>&1 || true
redis-cli -p "${p[0]}" CLUSTER NODES > "$out/cluster-nodes.txt"
slots_new=$(redis-cli -p "${p[3]}" CLUSTER NODES | awk '/myself/ { n = 0; for (i = 9; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
keys_new=$(redis-cli -p "${p[3]}" DBSIZE)
log "new master serves $slots_new slots, holds $keys_new keys"

set +e
wait "$bench_pid"
status=$?
set -e
log "bench exit $status, uptime: $(uptime)"
curl -sf "http://127.0.0.1:$port/metrics" > "$out/parley.metrics.txt" || true
cpu_server=$(cpu_s "$server")
cpu_redis=""
for i in 0 1 2 3; do cpu_redis="$cpu_redis ${p[$i]}=$(cpu_s "$(vk_pid "$work/redis-$i")")s"; done
kill -TERM "$server"; wait "$server" 2>/dev/null || true
server=""
cp "$work/parley.log" "$out/parley.log"

c=$(tr -d ' \n' < "$out/chat.json")
num() { echo "$c" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }
{
  echo
  echo "scale-up under chat load: ${conns} connections, channels of ${channel}, ${rate} msg/s, ${secs} s"
  echo "  new master: $slots_new of 16384 slots moved to it, $keys_new keys"
  echo "  rebalance: $(grep -o "^Moving [0-9]* slots from [^ ]* to [^ ]*" "$out/rebalance.txt" | tr '\n' ';')"
  echo "  connections lost (disconnects): $(num disconnects), reconnects $(num reconnects), failed reconnects $(num reconnect_failed)"
  echo "  rejections retried by clients: unavailable $(num unavailable), backpressure $(num backpressure), rate_limited $(num rate_limited); gave up $(num gave_up)"
  echo "  acknowledged messages lost (audit): lost $(num lost), history missing $(num history_missing), duplicates $(num duplicates), reorders $(num reorders), mismatches $(num mismatches)"
  echo "  CPU s whole run: parley $cpu_server; redis$cpu_redis; generator: see chat.txt"
  grep -E "^  ack |accepted|connections held|load generator CPU|verdict" "$out/chat.txt"
} | tee "$out/summary.txt"
exit "$status"
