#!/bin/bash
# Issue 13: `parley-bench compare world` and `compare broadcast`, each at the preset's
# offered load and at LOAD_X times it (default 5), targets parley,bun,node-ws in one run.
#   bench/worlds/compares.sh BENCH_BIN PARLEY_BIN OUT_DIR [extra parley-bench flags]
# Each compare starts every target itself on a free port, one after the other
# (tools/bench/compare.cc); the generator runs 2 worker threads. Writes
# OUT_DIR/compare-{world,broadcast}-{1,5}x.{txt,html} and -<target>.json, uptimes.
set -eu
[ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/prio.sh" bash "$0" "$@"
BENCH=$(realpath "$1"); PARLEY=$(realpath "$2"); OUT=$3; shift 3
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DURATION=${DURATION:-20}; LOAD_X=${LOAD_X:-5}; SHAPES=${SHAPES:-"broadcast world"}
TARGETS=${TARGETS:-parley,bun,node-ws}
rc=0
for shape in $SHAPES; do
  for x in 1 "$LOAD_X"; do
    name="compare-$shape-${x}x"
    echo "$name before: $(uptime)" >> "$OUT/uptime.txt"
    set +e
    "$BENCH" compare "$shape" --load-x "$x" --targets "$TARGETS" --duration "$DURATION" \
      --threads 2 --parley-bin "$PARLEY" --peers-dir "$ROOT/bench" --no-progress \
      --json "$OUT/$name.json" --html "$OUT/$name.html" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
    r=$?
    set -e
    echo "exit $r" >> "$OUT/$name.txt"
    [ $r -eq 0 ] || rc=$r
    echo "$name after: $(uptime)" >> "$OUT/uptime.txt"
    sed -n '/^compare /,$p' "$OUT/$name.txt"
  done
done
exit $rc
