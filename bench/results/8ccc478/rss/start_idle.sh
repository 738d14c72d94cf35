#!/usr/bin/env bash
# start_idle.sh BIN WORKDIR PORT -> starts BIN serve with the demo config (no --config: embedded
# store, demo tenant) in WORKDIR on PORT, waits for ready + SETTLE s (default 2), prints pid.
set -euo pipefail
bin=$1; work=$2; port=$3
mkdir -p "$work"; rm -rf "$work/data"
cat > "$work/parley.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
store = "embedded"
data_dir = "$work/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
TOML
"$bin" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "parley ready" "$work/server.log" && break; sleep 0.1; done
sleep "${SETTLE:-2}"
echo $pid
