#!/bin/bash
# Issue 25: what a world costs on the wire in JSON, MessagePack and MessagePack with
# state deltas, paired: the modes run one after another against fresh servers of one
# build (same config, state_delta = true in the world's namespace: clients without
# the capability get full bodies), ROUNDS times, alternating, so a load change on
# the shared machine hits all three.
#   bench/worlds/wire_cost.sh PARLEY_BIN BENCH_BIN OUT_DIR [PRESET [ROUNDS [extra flags]]]
# PRESET: world-6k (default) or world-big. MODES (default "json msgpack msgpack-delta")
# picks the modes and their order; msgpack-sds is MessagePack with batched deltas
# (PROTOCOL.md "Batched state deltas": parley-bench --batched-deltas). Writes OUT_DIR/<preset>-<mode>-<round>.{txt,json},
# the server's /metrics after each run (.metrics.txt: parley_namespace_bytes_out_total by
# encoding), uptime before and after, and what each process used (ps), then a summary
# table (summary.txt): bytes per delivery, bytes per avatar-second, server CPU per
# delivery, per mode and round.
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
. "$(dirname "$0")/bench_tenant.sh"
PARLEY=$(realpath "$1"); BENCH=$(realpath "$2"); OUT=$3; PRESET=${4:-world-6k}; ROUNDS=${5:-1}
shift $(( $# < 5 ? $# : 5 ))
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
PORT=${PORT:-7983}
NS=world; [ "$PRESET" = world-big ] && NS=big
AOI=""; [ "$PRESET" = world-big ] && AOI="aoi_cell = 50"

run_one() {  # mode round
  local mode=$1 round=$2 flags=()
  shift 2  # the rest: extra parley-bench flags
  case $mode in
    json) flags=(--encoding json) ;;
    msgpack) flags=(--encoding msgpack) ;;
    msgpack-delta) flags=(--encoding msgpack --deltas) ;;
    msgpack-sds) flags=(--encoding msgpack --batched-deltas) ;;
  esac
  local tag="$PRESET-$mode-$round" tmp
  tmp=$(mktemp -d /tmp/wire-cost.XXXXXX)
  cat > "$tmp/parley.toml" <<EOF
[server]
listen = "127.0.0.1:$PORT"
store = "embedded"
data_dir = "$tmp/data"
$(bench_tenant_toml)
[tenants.demo.namespaces.$NS]
durable = false
tick_ms = 20
presence = true
state_delta = true
$AOI
EOF
  cp "$tmp/parley.toml" "$OUT/parley.toml"
  "$PARLEY" serve --config "$tmp/parley.toml" > "$tmp/parley.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
  echo "before: $(uptime)" > "$OUT/$tag.uptime"
  set +e
  "$BENCH" "$PRESET" --target "127.0.0.1:$PORT" --threads 2 --server-pid "$pid" "${flags[@]}" \
    --json "$OUT/$tag.json" --no-progress "$@" > "$OUT/$tag.txt" 2>&1
  echo "exit $?" >> "$OUT/$tag.txt"
  set -e
  echo "after: $(uptime)" >> "$OUT/$tag.uptime"
  ps -o pid,pcpu,rss,etime,comm -p "$pid" >> "$OUT/$tag.uptime" 2>/dev/null || true
  ps -eo pcpu,comm --sort=-pcpu | head -8 >> "$OUT/$tag.uptime"
  curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^parley_namespace_' > "$OUT/$tag.metrics.txt" || true
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}

for round in $(seq "$ROUNDS"); do
  for mode in ${MODES:-json msgpack msgpack-delta}; do run_one "$mode" "$round" "$@"; done
done

{
  printf '%-28s %12s %14s %16s %10s %10s %8s\n' run B/delivery B/avatar-s srv-us/delivery deliv/s over-ideal exit
  for f in "$OUT"/"$PRESET"-*.json; do
    python3 - "$f" <<'PY'
import json, sys, os
r = json.load(open(sys.argv[1]))
w, f = r["wire"], r["figures"]
txt = open(sys.argv[1][:-5] + ".txt").read().strip().splitlines()[-1]
print("%-28s %12.1f %14.0f %16.3f %10.0f %10.3f %8s" % (os.path.basename(sys.argv[1])[:-5], w["bytes_per_delivery"],
      w["bytes_per_avatar_s"], w["server_cpu_us_per_delivery"],
      f["deliveries_per_s"] + f["state_deliveries_per_s"], w.get("over_ideal", 0), txt.split()[-1]))
PY
  done
} | tee "$OUT/summary.txt"
