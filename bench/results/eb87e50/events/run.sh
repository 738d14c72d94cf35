#!/usr/bin/env bash
# The issue 12 figures in this folder, as they were run (from the repository root,
# after building build/ at the commit this folder is named after). Each run starts a
# fresh server with bench/events.sh (embedded store, topic + board "hunt", Unix
# socket) at nice -n -15; the load average is printed before and after each.
set -u
out="$(dirname "$0")"
# hunt-20k for 10 minutes (zero loss, the board audit, push intervals).
nice -n -15 bench/events.sh hunt-20k --drain 30 > "$out/hunt-20k-600s.txt" 2>&1
# 35,000 events/s (hunt-20k's shape) for 60 s, then the same load through Redis Streams.
nice -n -15 bench/events.sh hunt-20k --duration 60 --drain 20 --redis /usr/bin/redis-server > "$out/hunt-20k-60s-redis.txt" 2>&1
# 60,000 events/s for 60 s (emit -> consumer p99), then Redis Streams.
nice -n -15 bench/events.sh hunt-20k --rate 60000 --conns 6 --duration 60 --drain 20 --redis /usr/bin/redis-server > "$out/60k-60s-redis.txt" 2>&1
# 100,000 events/s asked, events without ids (server RSS), 60 s.
nice -n -15 bench/events.sh hunt-20k --rate 100000 --conns 8 --no-ids --duration 60 --drain 20 > "$out/100k-60s-noids.txt" 2>&1
