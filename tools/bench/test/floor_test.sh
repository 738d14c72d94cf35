#!/bin/sh
# parley-floor in each send mode (one send() per delivery; --io-uring with each ring
# setup, and with the sockets in its file table; and batching on a 20 ms tick): the bench's chat audit passes (no loss, duplicate or reorder), and a member
# whose socket is full gets every frame whole and in order once it reads.
# Usage: floor_test.sh PATH/TO/parley-floor PATH/TO/parley-bench
set -u
FLOOR=${1:?usage: floor_test.sh FLOOR BENCH}
BENCH=${2:?usage: floor_test.sh FLOOR BENCH}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
modes="0:plain-send 20:plain-send"
if "$FLOOR" --io-uring-available 2>/dev/null; then
  modes="$modes 0:--io-uring=defer 0:--io-uring=coop 0:--io-uring=plain 0:--io-uring=defer,--fixed-files 20:--io-uring=defer"
else
  echo "parley-floor built without liburing: only the send() mode is tested"
fi
for m in $modes; do
  tick=${m%%:*}; m=${m#*:}
  flag=$(echo "$m" | tr , " "); [ "$m" = plain-send ] && flag=""
  port=$(free_port)
  "$FLOOR" "$port" "$tick" $flag > "$TMP/floor.log" 2>&1 &
  PID=$!
  for _ in $(seq 50); do grep -q "listening" "$TMP/floor.log" && break; sleep 0.1; done
  if ! "$BENCH" chat --ns room --target "127.0.0.1:$port" --conns 40 --rate 100 --duration 2 \
      --ramp-up 0.2 --drain 2 --no-history --no-progress --server-pid "$PID" > "$TMP/bench.out" 2>&1; then
    echo "FAIL ($m): the chat audit"; cat "$TMP/bench.out"; exit 1
  fi
  grep -q "verdict: PASS" "$TMP/bench.out" || { echo "FAIL ($m): no PASS verdict"; cat "$TMP/bench.out"; exit 1; }
  if ! timeout 60 python3 "$HERE/floor_slow_reader.py" "$port"; then
    echo "FAIL ($m): the slow reader"; cat "$TMP/floor.log"; exit 1
  fi
  kill "$PID"; wait "$PID" 2>/dev/null; PID=""
  echo "ok: $m, tick $tick"
done
