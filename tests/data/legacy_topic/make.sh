#!/usr/bin/env bash
# How data.tar.gz was made: a server from before topics recorded their key hash
# (main at b684f50, whose partitions started FNV-1a from the wrong basis) wrote
# topic demo/old, 16 partitions, 2 events for each of player-0..player-11 over
# the HTTP API, and stopped cleanly. Usage: make.sh OLD_PARLEY_BINARY
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/parley.toml" <<TOML
[server]
listen = "127.0.0.1:0"
store = "embedded"
data_dir = "$work/data"
[tenants.demo]
secret = "test-secret-demo-0123456789abcdef"
api_key = "key-demo"
[tenants.demo.topics.old]
partitions = 16
TOML
"$bin" serve --config "$work/parley.toml" >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'parley ready' "$work/out" && break; sleep 0.1; done
port=$(sed -n 's/.*parley ready http=\([0-9]*\).*/\1/p' "$work/out")
for round in 1 2; do
  evs=""
  for k in $(seq 0 11); do
    evs+="${evs:+,}{\"key\":\"player-$k\",\"type\":\"t\",\"id\":\"r$round-$k\",\"body\":{\"round\":$round}}"
  done
  curl -sf -H 'Authorization: Bearer key-demo' -d "{\"events\":[$evs]}" "http://127.0.0.1:$port/v1/events/old"
  echo
done
kill -TERM "$pid"
wait "$pid" || true
tar -C "$work" -czf "$here/data.tar.gz" data
