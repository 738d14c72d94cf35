#!/usr/bin/env bash
# The pair script of results/8ccc478/deliv2 (FLOOR_BASE and NEW_SLICE are options of it
# now) with this series' parley-bench as its default.
exec env BENCH="${BENCH:-/tmp/lean/bins/parley-bench}" bash "$(dirname "$0")/../../../8ccc478/deliv2/scripts/pair.sh" "$@"
