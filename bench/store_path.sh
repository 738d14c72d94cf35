#!/usr/bin/env bash
# Issue 10's store path at the reference rate: 6,000 msg/s into channels of 2, so
# that fan-out (one other member) does not hide the store. Two runs of the same
# parley-bench load, one after the other, each against a fresh server:
#   valkey:   Parley on store = "valkey" over a 3-master redis-server cluster on
#             loopback (appendonly yes, appendfsync $FSYNC), cluster = true;
#   embedded: Parley on its embedded store (the default, fsync = "never").
# Prints, per run, the ack latency row, accepted %, the audit verdict and the CPU
# seconds each process used during the bench (server, generator, each redis).
#
# usage: bench/store_path.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (load seconds, 60), RATE (6000), CONNS (2000), FSYNC (everysec),
#        RUNS ("valkey embedded"), RAMP (seconds to connect, 5)
#   e.g. bench/store_path.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/store-path
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bench_init "$@"
secs=${SECS:-60}
rate=${RATE:-6000}
conns=${CONNS:-2000}
fsync=${FSYNC:-everysec}
runs=${RUNS:-valkey embedded}

server=""
bench_stop() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null
}

summary="$out/summary.txt"
{
  echo "store_path.sh: ${rate} msg/s, ${conns} connections in channels of 2, ${secs} s, appendfsync ${fsync}"
  echo "commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ), uptime before: $(uptime)"
} | tee "$summary"

for run in $runs; do
  ports=""
  redis_dirs=()
  if [ "$run" = valkey ]; then
    base=$(vk_free_ports 31400 3)
    for i in 0 1 2; do
      d="$work/redis-$i"
      vk_start_node "$d" $((base + i)) "$fsync"
      redis_dirs+=("$d")
      ports="$ports $((base + i))"
    done
    # shellcheck disable=SC2086
    vk_create_cluster $ports
    nodes=$(for p in $ports; do printf '127.0.0.1:%s,' "$p"; done)
    nodes=${nodes%,}
  fi
  port=$(vk_free_ports 7980 1)
  parley_config "$work/$run.toml" "$port" "$run" "$work/data-$run" "${nodes:-}" true
  cp "$work/$run.toml" "$out/$run.toml"
  server=$(parley_start "$parley" "$work/$run.toml" "$work/$run.log")

  declare -A before=()
  for d in "${redis_dirs[@]}"; do before[$d]=$(cpu_s "$(vk_pid "$d")"); done
  set +e
  run_nice "$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size 2 \
    --rate "$rate" --duration "$secs" --ramp-up "${RAMP:-5}" --threads 2 --no-progress \
    --server-pid "$server" --json "$out/$run.json" > "$out/$run.txt" 2>&1
  status=$?
  set -e
  redis_cpu=""
  for d in "${redis_dirs[@]}"; do
    after=$(cpu_s "$(vk_pid "$d")")
    redis_cpu="$redis_cpu $(basename "$d") $(awk -v a="$after" -v b="${before[$d]}" 'BEGIN { printf "%.2f", a - b }') s;"
  done
  curl -sf "http://127.0.0.1:$port/metrics" > "$out/$run.metrics.txt" || true
  kill -TERM "$server"; wait "$server" 2>/dev/null || true
  server=""
  cp "$work/$run.log" "$out/$run.server.log"
  if [ "$run" = valkey ]; then
    for d in "${redis_dirs[@]}"; do cp "$d/log" "$out/$(basename "$d").log"; done
    vk_stop "${redis_dirs[@]}"
    sleep 0.5
  fi
  {
    echo
    echo "== $run (bench exit $status)"
    grep -E "^  (ack|delivery|send lag) |accepted|connections held|load generator CPU s|server CPU s|audit:|verdict" "$out/$run.txt" || tail -20 "$out/$run.txt"
    [ -n "$redis_cpu" ] && echo "  redis CPU s during the bench:$redis_cpu"
    echo "  stages inside the server (its /metrics):"
    "$root/bench/stage_breakdown.sh" "$out/$run.metrics.txt" 2>/dev/null | sed 's/^/    /' || true
    awk '/^parley_valkey_script_seconds_sum/ { s = $NF } /^parley_valkey_script_seconds_count/ { c = $NF }
         END { if (c > 0) printf "  append script round trip (parley_valkey_script_seconds): %d calls, mean %.3f ms\n", c, s / c * 1000 }' \
      "$out/$run.metrics.txt"
  } | tee -a "$summary"
done
echo "uptime after: $(uptime)" | tee -a "$summary"
