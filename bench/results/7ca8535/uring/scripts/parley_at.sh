#!/usr/bin/env bash
# parley_at.sh PARLEY PORT DIR: Parley with compare's config (tools/bench/compare.cc
# parley_config: embedded store, room not durable, tick 20 ms) on PORT.
set -eu
mkdir -p "$3/data"
cat > "$3/p.toml" <<T
[server]
listen = "127.0.0.1:$2"
store = "embedded"
data_dir = "$3/data"
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
T
exec "$1" serve --config "$3/p.toml"
