#!/usr/bin/env bash
# seq3.sh: the loop slice (server.loop_slice_us = 100, the new default) against the same code without it (threads = 1).
set -u
cd /tmp/lean
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/d-parley /tmp/lean/slice-parley runs/pair-slice-r2000 3 chat --ns room --conns 2000 --rate 2000 --duration 20
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/d-parley /tmp/lean/slice-parley runs/pair-slice-broadcast 3 broadcast --duration 20
uptime
THREADS=1 bash scripts/pair.sh /tmp/lean/d-parley /tmp/lean/slice-parley runs/pair-slice-world 3 world --duration 20
uptime
