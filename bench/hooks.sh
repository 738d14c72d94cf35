#!/usr/bin/env bash
# Issue 27: what a `pub` hook costs. Chat (chat-6k's shape: 10,000 connections in
# channels of 20, durable, embedded store) at each rate of RATES, each round one
# `parley-bench compare` of Parley without the hook and Parley with `hook_pub` on
# the `chat` namespace (target parley-hook), the order swapped every round so that
# neither side always runs first on a machine that drifts. The app server
# (bench/hook_app.mjs, Node http, keep-alive, parses each request, allows it) runs
# on this machine the whole time, on a Unix socket (HOOK_AT=tcp: a loopback port);
# compare reads its CPU from /proc/PID/stat over each target's run and the hook's
# counters from the hooked server's /metrics before stopping it.
#
# usage: bench/hooks.sh PARLEY_BIN BENCH_BIN OUT [extra compare flags]
#   env: RATES ("1000 6000"), ROUNDS (3), SECS (20: load phase per run), RAMP (10:
#   connect phase), THREADS (2: generator threads), HOOK_AT (unix | tcp),
#   NO_PRIO=1 (not at benchmark priority: bench/worlds/prio.sh, as record.sh runs)
#   e.g. bench/hooks.sh build/src/server/parley build/tools/bench/parley-bench /tmp/hooks
# Prints per rate the medians over rounds (bench/hooks_summary.py) and exits 1 when
# a run failed: its audit, an acked pub the hook did not allow, a hook timeout,
# failure or backpressure, or a request the app server refused.
# Time: ROUNDS x RATES x 2 runs of RAMP + SECS + ~12 s (start, settle, drain,
# history audit): the defaults about 10 minutes.
set -uo pipefail
# Its own autogroup at nice -15: the app server, Parley and the generator share one
# group, and against other sessions' builds a hook's 200 ms deadline passes while
# that group waits for a CPU (a trial at load 8 did: timeouts, then a reconnect per
# timed-out call, and the hooked run collapsed while the one without held).
[ -n "${NO_PRIO:-}" ] || [ -n "${PARLEY_PRIO:-}" ] || exec "$(dirname "$0")/worlds/prio.sh" bash "$0" "$@"
here="$(cd "$(dirname "$0")" && pwd)"
parley="$(realpath "$1")" bench="$(realpath "$2")" out="$3"
shift 3
rates="${RATES:-1000 6000}" rounds="${ROUNDS:-3}" secs="${SECS:-20}" ramp="${RAMP:-10}"
threads="${THREADS:-2}" hook_at="${HOOK_AT:-unix}"
mkdir -p "$out"
out="$(realpath "$out")"
work="$(mktemp -d /tmp/parley-hooks.XXXXXX)"

# compare's Parley config gives the tenant this api_key: the hook's bearer.
key=bench-api-key
if [ "$hook_at" = tcp ]; then
  app_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  listen="$app_port" url="http://127.0.0.1:$app_port/hooks"
  stats() { curl -sf "http://127.0.0.1:$app_port/stats"; }
else
  listen="unix:$work/app.sock" url="unix:$work/app.sock"
  stats() { curl -sf --unix-socket "$work/app.sock" http://localhost/stats; }
fi
node "$here/hook_app.mjs" "$listen" "$key" > "$work/app.out" 2> "$work/app.err" &
app=$!
trap 'kill -TERM "$app" 2>/dev/null; wait "$app" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do stats >/dev/null 2>&1 && break; sleep 0.1; done
stats >/dev/null || { echo "hooks.sh: the app server did not start:" >&2; cat "$work/app.err" >&2; exit 2; }
echo "app server pid $app at $url ($(node --version)); $rounds rounds x rates $rates, $secs s each" | tee "$out/hooks.txt"

rc=0
for r in $(seq 1 "$rounds"); do
  for rate in $rates; do
    targets=parley,parley-hook
    [ $((r % 2)) -eq 0 ] && targets=parley-hook,parley
    name="chat-$rate.r$r"
    before=$(stats)
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    "$bench" compare chat-6k --rate "$rate" --duration "$secs" --ramp-up "$ramp" \
      --threads "$threads" --targets "$targets" --hook-url "$url" --app-pid "$app" \
      --parley-bin "$parley" --no-progress --json "$out/$name.json" "$@" \
      > "$out/$name.txt" 2>&1
    code=$?
    after=$(stats)
    [ "$code" -eq 0 ] || rc=1
    # What the app server saw during this compare: the hooked side's requests only.
    echo "$name targets $targets load $load exit $code app_before $before app_after $after" \
      | tee -a "$out/hooks.txt"
  done
done
python3 "$here/hooks_summary.py" "$out" | tee -a "$out/hooks.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
exit "$rc"
