#!/usr/bin/env bash
# events_idle.sh N LABEL=BIN...: idle RSS with bench/events.sh's config (topic hunt, 16 partitions, leaderboard), 2 s after ready
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
n=$1; shift
for i in $(seq "$n"); do for lb in "$@"; do
  label=${lb%%=*}; bin=${lb#*=}; work=$(mktemp -d)
  sed -n '/^cat > "\$work\/parley.toml" <<TOML/,/^TOML/p' "$here/load_rss.sh" | sed '1d;$d' | sed "s|\$work|$work|g" > "$work/parley.toml"
  "$bin" serve --config "$work/parley.toml" > "$work/server.log" 2>&1 & pid=$!
  for _ in $(seq 100); do grep -q "parley ready" "$work/server.log" && break; sleep 0.1; done
  sleep ${SETTLE:-2}
  echo "$label $(awk '/^(VmRSS|RssAnon|RssFile):/{printf "%s ", $2}' /proc/$pid/status)"
  kill -TERM $pid; wait $pid 2>/dev/null || true; rm -rf "$work"
done; done
