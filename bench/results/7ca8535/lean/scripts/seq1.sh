#!/usr/bin/env bash
# The paired runs of this step, one after the other (threads = 1).
set -u
cd /tmp/lean
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/tail2-parley /tmp/lean/rw2-parley runs/pair-rw-vs-tail-r200 4 chat --ns room --conns 200 --rate 200 --duration 20
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/base-parley /tmp/lean/rw2-parley runs/pair-rw-r2000 3 chat --ns room --conns 2000 --rate 2000 --duration 20
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/base-parley /tmp/lean/rw2-parley runs/pair-rw-broadcast 3 broadcast --duration 20
uptime
