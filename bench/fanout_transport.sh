#!/usr/bin/env bash
# Issue 10: the cross-node feed's transport measured side by side on redis directly
# (tools/bench/fanout_transport.cc): the store's append script at RATE msg/s into
# channels of 2 (CHANNELS channels over 64 partitions) on a fresh 3-master
# redis-server cluster per run, a reader (node B) following FOLLOW of the 64
# partitions by:
#   base:   the script without SPUBLISH, no reader (what the store costs alone)
#   pubsub: the script as built (SPUBLISH {demo.pK}:f), SSUBSCRIBE per partition,
#           one connection per master
#   tail:   the script without SPUBLISH, XREAD BLOCK per partition WAL stream
#           {demo.pK}:w, one connection per partition (a cluster refuses one
#           XREAD over several slots)
#   poll:   the script without SPUBLISH, one connection per master, a pipelined
#           non-blocking XREAD per partition every POLL_MS
# Every process runs at nice -15. Prints per run the writer's and the reader's line
# and the CPU seconds of the three redis-servers over the writer's run.
#
# usage: bench/fanout_transport.sh FANOUT_TRANSPORT_BIN OUT_DIR
#   env: SECS (20), RATE (6000), CHANNELS (1000), FOLLOWS ("64 16 4"),
#        MODES ("base pubsub tail poll"), POLL_MS (2), ROUNDS (2), FSYNC (no: appendonly
#        yes, appendfsync no, so that disk stalls of the shared machine (everysec
#        blocks writes while an fsync lags) stay out of a transport comparison)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bin=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
secs=${SECS:-20}
rate=${RATE:-6000}
channels=${CHANNELS:-1000}
follows=${FOLLOWS:-64 16 4}
modes=${MODES:-base pubsub tail poll}
poll_ms=${POLL_MS:-2}
rounds=${ROUNDS:-2}
fsync=${FSYNC:-no}
work=$(mktemp -d)
dirs=()
cleanup() { vk_stop "${dirs[@]}" 2>/dev/null; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT
log="$out/runs.txt"
{
  echo "fanout_transport.sh: ${rate} msg/s, ${channels} channels, 64 partitions, ${secs} s per run, follows: ${follows}, modes: ${modes}, rounds ${rounds}, appendfsync ${fsync}"
  echo "commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ), uptime before: $(uptime)"
} | tee "$log"
n=0
for round in $(seq "$rounds"); do
  for follow in $follows; do
    for mode in $modes; do
      [ "$mode" = base ] && [ "$follow" != "$(echo $follows | awk '{print $1}')" ] && continue
      n=$((n + 1))
      base=$(vk_free_ports 31500 3)
      dirs=()
      ports=""
      for i in 0 1 2; do
        d="$work/r$n-$i"; vk_start_node "$d" $((base + i)) "$fsync"; dirs+=("$d"); ports="$ports $((base + i))"
      done
      # shellcheck disable=SC2086
      vk_create_cluster $ports
      nodes=$(for p in $ports; do printf '127.0.0.1:%s,' "$p"; done); nodes=${nodes%,}
      publish=0; [ "$mode" = pubsub ] && publish=1
      declare -A before=()
      for d in "${dirs[@]}"; do before[$d]=$(cpu_s "$(vk_pid "$d")"); done
      run_nice "$bin" write --nodes "$nodes" --publish $publish --rate "$rate" --channels "$channels" \
        --secs "$secs" > "$work/w.txt" 2>&1 &
      wpid=$!
      rpid=""
      if [ "$mode" != base ]; then
        sleep 0.5
        run_nice "$bin" read --nodes "$nodes" --mode "$mode" --follow "$follow" --rate "$rate" \
          --channels "$channels" --poll-ms "$poll_ms" --secs "$(awk -v s="$secs" 'BEGIN { print s - 1.5 }')" \
          > "$work/r.txt" 2>&1 &
        rpid=$!
      fi
      wait $wpid || true
      [ -n "$rpid" ] && { wait "$rpid" || true; }
      # Time redis spent inside commands, summed over the masters (INFO
      # commandstats: the script with its SPUBLISH, XREAD served when unblocked).
      stats=$(for p in $ports; do redis-cli -p "$p" INFO commandstats; done | tr -d '\r' |
        awk -F'[:,=]' '/^cmdstat_/ { c[$1] += $3; u[$1] += $5 }
          END { for (k in c) if (c[k] > 100) printf "%s calls=%d usec=%d; ", substr(k, 9), c[k], u[k] }')
      rcpu=0
      for d in "${dirs[@]}"; do
        rcpu=$(awk -v a="$(cpu_s "$(vk_pid "$d")")" -v b="${before[$d]}" -v c="$rcpu" 'BEGIN { printf "%.2f", c + a - b }')
      done
      sent=$(grep -o 'sent=[0-9]*' "$work/w.txt" | cut -d= -f2)
      {
        echo
        echo "== round $round mode $mode follow $follow"
        cat "$work/w.txt"
        [ -n "$rpid" ] && cat "$work/r.txt"
        echo "commandstats: $stats"
        echo "redis_cpu_s=$rcpu redis_cpu_us_per_msg=$(awk -v c="$rcpu" -v s="${sent:-0}" 'BEGIN { if (s > 0) printf "%.2f", c / s * 1e6 }')"
      } | tee -a "$log"
      vk_stop "${dirs[@]}"
      sleep 0.5
      rm -rf "${dirs[@]}"
    done
  done
done
echo "uptime after: $(uptime)" | tee -a "$log"
