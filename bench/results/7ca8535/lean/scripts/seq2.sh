#!/usr/bin/env bash
# seq2.sh: main at the start (7ca8535) against this series' head, then the floor against it (threads = 1).
set -u
cd /tmp/lean
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/base-parley /tmp/lean/d-parley runs/pair-head-r200 5 chat --ns room --conns 200 --rate 200 --duration 20
uptime
THREADS=1 FLOOR_BASE=1 bash scripts/pair.sh /tmp/lean/bins/parley-floor /tmp/lean/d-parley runs/pair-floor-head-r200 3 chat --ns room --conns 200 --rate 200 --duration 20
uptime
THREADS=1 FLOOR_BASE=1 bash scripts/pair.sh /tmp/lean/bins/parley-floor /tmp/lean/base-parley runs/pair-floor-base-r200 3 chat --ns room --conns 200 --rate 200 --duration 20
uptime
