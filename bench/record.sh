#!/usr/bin/env bash
# The record in one command (issue 29): builds what it needs, runs every row of
# bench/RESULTS.md in a fixed order (bench/record/rows.sh) with the machine's load
# written beside each run, and writes the table to OUT as Markdown (RECORD.md) and
# as an HTML page with charts (record.html), each row compared with the previous
# record (bench/record.tsv) and flagged when it moved beyond its noise.
#
# usage: bench/record.sh [--quick] OUT
#   --quick   every row for a second or two with few connections: a smoke test
#             that each still runs (the test suite's record_quick), not figures.
#   env: PARLEY_BIN, PARLEY_BENCH_BIN   use these binaries (parley-floor must sit
#                                       beside parley-bench) instead of building
#        BUILD       build folder when building (default: OUT/build)
#        PREVIOUS    the record to compare with (default: bench/record.tsv)
#        ROWS        only these rows (names from rows.sh's RECORD_ROWS)
#        SERVER_CPUS / BENCH_CPUS   the split for split-core rows (default: the
#                    first half of the CPUs for the servers, the rest for the
#                    generator; 0 and 1 on two cores)
#        NO_PEERS=1  no Bun (what the compares then lack says so)
#        POWERLOSS_TEST  a build's tests/powerloss_test (built with tests): the
#                    powerloss row (root and /dev/fuse; skipped without)
# Exit status: 0 every row ran; 1 a row failed (its cell says so); 2 usage or build.
#
# A past figure is reproduced by checking out its commit and running its row's
# command (RESULTS.md); a new record is this run's OUT/record.tsv copied to
# bench/record.tsv and OUT/RECORD.md into RESULTS.md, from a quiet machine.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
# A full run at benchmark priority (its own autogroup at nice -15: bench/worlds/prio.sh).
[ "$quick" = 1 ] || [ -n "${PARLEY_PRIO:-}" ] || exec "$root/bench/worlds/prio.sh" bash "$0" "$@"
[ $# -eq 1 ] || { sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//;$d' >&2; exit 2; }
mkdir -p "$1" && out=$(realpath "$1") || exit 2
previous=${PREVIOUS:-$root/bench/record.tsv}
: > "$out/record.log"
log() { echo "record: $(date -u +%H:%M:%S) $*" | tee -a "$out/record.log" >&2; }

# Binaries.
if [ -n "${PARLEY_BIN:-}" ] && [ -n "${PARLEY_BENCH_BIN:-}" ]; then
  parley=$(realpath "$PARLEY_BIN"); bench=$(realpath "$PARLEY_BENCH_BIN")
else
  build=${BUILD:-$out/build}
  log "building parley, parley-bench, parley-floor in $build"
  { [ -f "$build/build.ninja" ] ||
      cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_TESTS=OFF \
        > "$out/configure.log" 2>&1; } &&
    cmake --build "$build" --target parley parley-bench parley-floor > "$out/build.log" 2>&1 ||
    { log "build failed: $out/build.log"; exit 2; }
  parley=$build/src/server/parley; bench=$build/tools/bench/parley-bench
fi
[ -x "$parley" ] && [ -x "$bench" ] && [ -x "$(dirname "$bench")/parley-floor" ] ||
  { log "missing a binary: $parley, $bench, parley-floor beside it"; exit 2; }

# Peers: Bun from bench/package-lock.json (bench/setup.sh's npm ci) unless told not to.
peers=""
if [ -z "${NO_PEERS:-}" ]; then
  if [ ! -x "$root/bench/node_modules/bun/bin/bun.exe" ] && [ "$quick" = 0 ] && command -v npm > /dev/null; then
    log "installing the peers (npm ci in bench/)"
    (cd "$root/bench" && npm ci --no-audit --no-fund > "$out/npm.log" 2>&1)
  fi
  "$root/bench/node_modules/bun/bin/bun.exe" --version > /dev/null 2>&1 && peers=bun
fi
[ -n "$peers" ] || log "no Bun: the compares run without it"

# The split: servers on the first half of the CPUs, the generator on the rest.
ncpu=$(nproc)
half=$(( ncpu / 2 > 0 ? ncpu / 2 : 1 ))
server_cpus=${SERVER_CPUS:-$([ "$half" -gt 1 ] && echo "0-$((half - 1))" || echo 0)}
bench_cpus=${BENCH_CPUS:-$([ "$ncpu" -gt 1 ] && { [ $((ncpu - half)) -gt 1 ] && echo "$half-$((ncpu - 1))" || echo "$half"; } || echo 0)}

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
model=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo | awk '{print $1, $2}')
mem=$(awk '/^MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)
machine_base="$ncpu cpus ($model), $mem"
[ "$quick" = 1 ] && machine_base="quick: $machine_base"

values="$out/values.tsv"
printf 'id\tvalue\tpeer\tcommit\tdate\tmachine\tcommand\treport\tnote\n' > "$values"
# emit ID VALUE PEER COMMAND REPORT NOTE: one figure of the row being run (rows.sh);
# REPORT is relative to OUT. The row's metadata (workload, unit, noise, ...) is
# bench/record.tsv's for the same id.
emit() {
  local v=${2:-}
  [ -n "$v" ] || v="-"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$v" "${3:-}" "$commit" "$(date -u +%F)" \
    "$row_machine" "${4:-}" "${5:-}" "${6:-}" | tr -d '\r' >> "$values"
}

. "$root/bench/record/rows.sh"

failed=0
start=$(date +%s)
probe_s=$([ "$quick" = 1 ] && echo 0.2 || echo 2)  # how long the load is sampled beside each row
for entry in $RECORD_ROWS; do
  name=${entry%%:*}; fn=${entry#*:}
  if [ -n "${ROWS:-}" ] && ! [[ " $ROWS " == *" $name "* ]]; then continue; fi
  d="$out/$name"; rm -rf "$d"; mkdir -p "$d"  # nothing of an earlier run left to be read
  before=$(python3 "$root/bench/record/load.py" "$probe_s" --mine $$)
  row_machine="$machine_base; $(echo "$before" | sed -E 's/^load ([0-9.]+) .*others. CPU ([0-9]+) %.*/load \1, others \2 % CPU/')"
  log "$name: $before"
  t0=$(date +%s)
  "$fn" "$d"
  rc=$?
  after="(not sampled in --quick)"
  [ "$quick" = 1 ] || after=$(python3 "$root/bench/record/load.py" "$probe_s" --mine $$)
  { echo "before: $before"; echo "after:  $after"; echo "exit $rc, $(( $(date +%s) - t0 )) s"; } > "$d/load.txt"
  case $rc in
    0) log "$name: done in $(( $(date +%s) - t0 )) s" ;;
    3) log "$name: skipped ($(cat "$d/skipped" 2>/dev/null))"
       printf '%s\t-\t\t%s\t%s\t%s\t\t\tskipped: %s\n' "row.$name" "$commit" "$(date -u +%F)" \
         "$row_machine" "$(cat "$d/skipped" 2>/dev/null)" >> "$values" ;;
    *) log "$name: FAILED (exit $rc; $d)"; failed=1
       printf '%s\t-\t\t%s\t%s\t%s\t\t%s/\tFAILED (exit %s)\n' "row.$name" "$commit" "$(date -u +%F)" \
         "$row_machine" "$name" "$rc" >> "$values" ;;
  esac
done
log "all rows in $(( $(date +%s) - start )) s"
# A row that ran but whose figure is not in its report: the report's format moved
# under the row (rows.sh's extraction), which the next record would miss.
missing=$(awk -F'\t' 'NR > 1 && $2 == "-" && $1 !~ /^row\./ {print $1}' "$values" | tr '\n' ' ')
[ -z "$missing" ] || { log "figures missing from their reports: $missing"; failed=1; }

python3 "$root/bench/record/table.py" "$values" --previous "$previous" --md "$out/RECORD.md" \
  --html "$out/record.html" --write-tsv "$out/record.tsv" || failed=1
log "table: $out/RECORD.md, $out/record.html"
# The committed page is the committed record's rendering and links only reports
# that are there (a smoke test of the record itself).
if [ "$quick" = 1 ]; then
  python3 "$root/bench/record/table.py" "$root/bench/record.tsv" --reports results \
    --check "$root/bench/RESULTS.md" || failed=1
fi
exit $failed
