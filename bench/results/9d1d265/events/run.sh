#!/usr/bin/env bash
# Issue 12 final runs, h-events (session of 2026-11-30/12-01): main at the helper's
# start (699bcec) against the branch, interleaved, on the shared 2-core machine.
# usage: run.sh BASE_DIR NEW_DIR OUT   (each DIR holds a `parley`; the same
#        parley-bench, BASE_DIR/parley-bench, drives both)
# Run from a checkout of the branch (bench/events.sh comes from it; it is the same
# at 699bcec). Every run at nice -n -15; load average printed by events.sh.
set -u
base=$1; new=$2; out=$3
mkdir -p "$out"
root="$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)"
[ -f "$root/bench/events.sh" ] || root=/work/wt/events
bench="$base/parley-bench"
run() {  # label bin args...
  local label=$1 bin=$2; shift 2
  echo "== $label $(date -u +%T) $(uptime | sed 's/.*load/load/')"
  PARLEY_BIN=$bin/parley PARLEY_BENCH_BIN=$bench nice -n -15 bash "$root/bench/events.sh" hunt-20k "$@" > "$out/$label.txt" 2>&1
  grep -E "acked|group 0:|group 1:|server:|push intervals|leaderboard|redis|Redis|ratio|idle rss|load" "$out/$label.txt" | sed 's/^/   /'
}
idle() {  # label bin: a fresh server's RSS 10 s after start (no load)
  local label=$1 bin=$2 work; work=$(mktemp -d)
  sed -n '/^\[server\]/,/^TOML/p' "$root/bench/events.sh" | sed '$d' | sed "s|\$port|7971|; s|\$work|$work|g" > "$work/parley.toml"
  "$bin/parley" serve --config "$work/parley.toml" > "$work/log" 2>&1 & local pid=$!
  sleep 10
  echo "== $label idle rss $(awk '/^VmRSS/{print $2}' /proc/$pid/status) KiB" | tee "$out/$label.txt"
  kill -TERM $pid; wait $pid 2>/dev/null; rm -rf "$work"
}
idle idle-base "$base"; idle idle-new "$new"
for r in 1 2; do
  run 60k-base-$r "$base" --rate 60000 --conns 6 --duration 30 --drain 15
  run 60k-new-$r "$new" --rate 60000 --conns 6 --duration 30 --drain 15
done
run 35k-base "$base" --duration 45 --drain 15
run 35k-new-redis "$new" --duration 45 --drain 15 --redis /usr/bin/redis-server
run 100k-base "$base" --rate 100000 --conns 8 --no-ids --duration 30 --drain 15
run 100k-new "$new" --rate 100000 --conns 8 --no-ids --duration 30 --drain 15
