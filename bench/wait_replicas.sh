#!/usr/bin/env bash
# What valkey.wait_replicas costs an ack (issue 30): one Parley node on a
# 3-master + 3-replica redis-server cluster on loopback (appendonly yes,
# appendfsync $FSYNC), parley-bench chat at each rate of $RATES with
# wait_replicas 0 and 1, one after the other on the same cluster (FLUSHALL
# between runs). Prints, per run, the ack latency row, acked msg/s, the audit
# verdict, the CPU seconds each process used during the load (Parley, the
# generator, every redis-server) and the load average before and after.
#
# usage: bench/wait_replicas.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (load seconds, 20), RATES ("2000 6000"), WAITS ("0 1"), CONNS (1000),
#        CHANNEL_SIZE (20), FSYNC (everysec), WAIT_TIMEOUT_MS (1000)
#   e.g. bench/wait_replicas.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/wait-replicas
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bench_init "$@"
secs=${SECS:-20}
rates=${RATES:-2000 6000}
waits=${WAITS:-0 1}
conns=${CONNS:-1000}
size=${CHANNEL_SIZE:-20}
fsync=${FSYNC:-everysec}

server=""
bench_stop() { [ -z "$server" ] || { kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; }
bench_summary "$out/summary.txt" "wait_replicas.sh: rates ${rates} msg/s, wait_replicas ${waits}, ${conns} connections in channels of ${size}, ${secs} s, appendfsync ${fsync}"

# Six nodes: the first three become masters, each of the others a replica of one.
base=$(vk_free_ports 31600 6)
ports=()
redis_dirs=()
for i in 0 1 2 3 4 5; do
  d="$work/redis-$i"
  vk_start_node "$d" $((base + i)) "$fsync"
  redis_dirs+=("$d")
  ports+=($((base + i)))
done
addrs=()
for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >/dev/null
vk_wait_ok "${ports[@]}"
# Every replica in sync before the first run.
for _ in $(seq 300); do
  synced=0
  for p in "${ports[@]}"; do
    redis-cli -p "$p" INFO replication | grep -q "master_link_status:up" && synced=$((synced + 1))
  done
  [ "$synced" = 3 ] && break
  sleep 0.1
done
[ "$synced" = 3 ] || { echo "replicas did not sync" >&2; exit 1; }
nodes=$(for p in "${ports[@]:0:3}"; do printf '127.0.0.1:%s,' "$p"; done)
nodes=${nodes%,}

for rate in $rates; do
  for w in $waits; do
    run="rate${rate}-wait${w}"
    for p in "${ports[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null 2>&1 || true; done
    port=$(vk_free_ports 7990 1)
    parley_config "$work/$run.toml" "$port" valkey "$work/data-$run" "$nodes" true
    sed -i "/^command_timeout_ms/a wait_replicas = $w\nwait_timeout_ms = ${WAIT_TIMEOUT_MS:-1000}" "$work/$run.toml"
    cp "$work/$run.toml" "$out/$run.toml"
    server=$(parley_start "$parley" "$work/$run.toml" "$work/$run.log")
    vk_cpu_mark "${redis_dirs[@]}"
    server_before=$(cpu_s "$server")
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    set +e
    run_nice "$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size "$size" \
      --rate "$rate" --duration "$secs" --threads 2 --no-progress \
      --server-pid "$server" --json "$out/$run.json" > "$out/$run.txt" 2>&1
    status=$?
    set -e
    load_after=$(cut -d' ' -f1-3 /proc/loadavg)
    server_cpu=$(awk -v a="$(cpu_s "$server")" -v b="$server_before" 'BEGIN { printf "%.2f", a - b }')
    redis_cpu=$(vk_cpu_used "${redis_dirs[@]}")
    curl -sf "http://127.0.0.1:$port/metrics" > "$out/$run.metrics.txt" || true
    kill -TERM "$server"; wait "$server" 2>/dev/null || true
    server=""
    cp "$work/$run.log" "$out/$run.server.log"
    {
      echo
      echo "== rate $rate, wait_replicas $w (bench exit $status); load average before $load_before, after $load_after"
      grep -E "^  (ack|delivery|send lag) |accepted|acked|load generator CPU s|audit:|verdict" "$out/$run.txt" || tail -20 "$out/$run.txt"
      echo "  CPU s during the run: parley $server_cpu;$redis_cpu (redis-0..2 masters, 3..5 replicas)"
      awk '/^parley_valkey_wait_short_total/ { print "  appends refused, too few replicas in time: " $NF }' "$out/$run.metrics.txt"
    } | tee -a "$summary"
  done
done
for d in "${redis_dirs[@]}"; do cp "$d/log" "$out/$(basename "$d").log"; done
echo "uptime after: $(uptime)" | tee -a "$summary"
