#!/usr/bin/env bash
# The cost of fsync = "always" against "never" (issue 26), paired in one command:
# the same parley-bench chat load against a fresh server of each setting, in
# turns (never, always, never, always, ...), data dir on the real disk (not tmpfs).
# Two loads: a fixed rate (ack latency), and an offered rate above what either
# takes (acknowledged throughput). Prints one line per run and the medians.
#
# usage: tests/powerloss/fsync_cost.sh PARLEY_BIN BENCH_BIN [ROUNDS]
#   env: SECS (15), RATE (2000 msg/s), FLOOD (40000 msg/s; 0: no flood runs), CONNS
#        (200), DIR (a new folder under /var/tmp)
set -euo pipefail
parley=$1
bench=$2
rounds=${3:-3}
secs=${SECS:-15}
rate=${RATE:-2000}
flood=${FLOOD:-40000}
conns=${CONNS:-200}
work=${DIR:-$(mktemp -d /var/tmp/fsync-cost.XXXXXX)}
mkdir -p "$work"
echo "fsync_cost: $conns connections in channels of 2, $secs s per run, $rounds rounds; $(nproc) cores, shared; uptime: $(uptime)"
echo "data on: $(df --output=source,fstype "$work" | tail -1)"

run_one() {  # mode load_rate label
  local mode=$1 r=$2 label=$3
  local d="$work/$mode-$label-$RANDOM"
  mkdir -p "$d"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$d/parley.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
tcp_listen = ""
data_dir = "$d/data"
fsync = "$mode"
log_level = "warn"

[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key-change-me"
publish_per_sec = 0
publish_per_conn_sec = 0
TOML
  "$parley" serve --config "$d/parley.toml" > "$d/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do grep -q "parley ready" "$d/server.log" && break; sleep 0.05; done
  "$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size 2 --rate "$r" \
    --duration "$secs" --ramp-up 2 --no-progress --server-pid "$pid" --json "$d/bench.json" \
    > "$d/bench.out" 2>&1 || true
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$d/bench.json" "$mode" "$label" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"run mode={sys.argv[2]} load={sys.argv[3]} failed={e}")
    sys.exit(0)
f, a = j["figures"], j["latency_ms"]["ack"]
print(f"run mode={sys.argv[2]} load={sys.argv[3]} acked_per_s={f['msgs_per_s']:.0f} "
      f"ack_p50_ms={a['p50']:.3f} ack_p99_ms={a['p99']:.3f} server_cpu_s={f['server_cpu_s']:.2f} "
      f"accepted_pct={f['accepted_pct']:.3f}")
PY
  rm -rf "$d/data"
}

for i in $(seq "$rounds"); do
  for mode in never always; do run_one "$mode" "$rate" fixed; done
  [ "$flood" = 0 ] || for mode in never always; do run_one "$mode" "$flood" flood; done
done | tee "$work/runs.txt"
python3 - "$work/runs.txt" <<'PY'
import sys, statistics, re
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("run ") or "failed=" in line: continue
    kv = dict(x.split("=") for x in line.split()[1:])
    rows.setdefault((kv["mode"], kv["load"]), []).append(kv)
for load in ("fixed", "flood"):
    for mode in ("never", "always"):
        r = rows.get((mode, load), [])
        med = lambda k: statistics.median(float(x[k]) for x in r if x[k] not in ("None",)) if r else 0
        print(f"median {load:5} {mode:6}: acked/s {med('acked_per_s'):.0f}  ack p50 {med('ack_p50_ms'):.2f} ms  p99 {med('ack_p99_ms'):.2f} ms  server CPU {med('server_cpu_s'):.2f} s  (n={len(r)})")
PY
echo "runs in $work"
