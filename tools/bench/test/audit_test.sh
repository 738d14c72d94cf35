#!/bin/sh
# Proves the zero-loss audit: against a correct server the bench passes (exit 0);
# against one that drops, duplicates and reorders one message each, it reports
# exactly one of each and exits 1. Usage: audit_test.sh PATH/TO/parley-bench
set -u
BENCH=${1:?usage: audit_test.sh PATH/TO/parley-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

# A free port: let the kernel pick one, then hand it to the server.
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

start_server() {  # $1 = faults
  port=$(free_port)
  node "$HERE/faulty_server.js" "$port" "$1" > "$TMP/server.log" 2>&1 &
  PIDS="$PIDS $!"
  for _ in $(seq 50); do grep -q "faulty server" "$TMP/server.log" && return 0; sleep 0.1; done
  echo "server did not start"; cat "$TMP/server.log"; exit 1
}

run_bench() {  # $1 = json out, then more bench flags
  out=$1
  shift
  "$BENCH" chat --target "127.0.0.1:$port" --transport tcp --conns 4 --channel-size 4 \
    --rate 40 --duration 2 --ramp-up 0.2 --drain 2 --no-history --no-progress \
    --label faulty --json "$out" "$@" > "$TMP/bench.out" 2>&1
}

field() {  # $1 json, $2 key in .counters
  node -e 'const r=require(process.argv[1]); console.log(r.counters[process.argv[2]])' "$1" "$2"
}

fail=0
check() {  # $1 what, $2 got, $3 want
  if [ "$2" = "$3" ]; then echo "ok   $1 = $2"; else echo "FAIL $1 = $2, want $3"; fail=1; fi
}

start_server ""
run_bench "$TMP/clean.json"; rc=$?
check "clean run exit status" "$rc" 0
check "clean run lost" "$(field "$TMP/clean.json" lost)" 0

start_server "drop,dup,reorder"
run_bench "$TMP/faulty.json"; rc=$?
check "faulty run exit status" "$rc" 1
check "faulty run lost" "$(field "$TMP/faulty.json" lost)" 1
check "faulty run duplicates" "$(field "$TMP/faulty.json" duplicates)" 1
check "faulty run reorders" "$(field "$TMP/faulty.json" reorders)" 1
# A seq given to a second message: the first acked one is lost, not only a mismatch.
start_server "reuse"
run_bench "$TMP/reuse.json"; rc=$?
check "reused seq exit status" "$rc" 1
check "reused seq lost" "$(field "$TMP/reuse.json" lost)" 1

# The server dies mid-run: 4 (options.cc), although the audit fails as well.
start_server "die"
server_pid=${PIDS##* }
run_bench "$TMP/die.json" --server-pid "$server_pid"; rc=$?
check "dead server exit status" "$rc" 4
if [ "$fail" != 0 ]; then cat "$TMP/bench.out"; fi
[ "$fail" = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit "$fail"
