#!/bin/sh
# Turns a Parley /metrics dump into the per-stage latency table of bench/RESULTS.md:
# for each stage of parley_stage_seconds (decode, queue_wait, append, fanout, write)
# and for parley_ack_seconds (ack): count, mean (_sum / _count) and approximate p50 /
# p99, interpolated linearly inside the histogram bucket that holds the quantile (as
# Prometheus' histogram_quantile does). A quantile in the first bucket prints as
# "<= its bound" (0.05 ms: interpolating from 0 would invent a figure), one in the +Inf
# bucket as "> the last bound". Parley's buckets are 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
# 10, 20, 30, 50, 100, 250, 500 ms, 1, 2.5, 5, 10 s: read the quantiles as that coarse.
#
#   bench/stage_breakdown.sh metrics.txt
#   curl -s http://127.0.0.1:7700/metrics | bench/stage_breakdown.sh
#   bench/stage_breakdown.sh http://127.0.0.1:7700/metrics
#
# The server's histograms count from its start: take the dump from a server started
# for the run to have the run's figures only.
set -eu
src=${1:--}
case "$src" in
  http://*|https://*) input=$(curl -sf "$src") || { echo "cannot fetch $src" >&2; exit 2; } ;;
  -) input=$(cat) ;;
  *) input=$(cat "$src") ;;
esac
printf '%s\n' "$input" | awk '
function stage_of(line,   s) {
  if (line ~ /^parley_ack_seconds/) return "ack"
  if (match(line, /stage="[a-z_]+"/)) return substr(line, RSTART + 7, RLENGTH - 8)
  return ""
}
function fmt_ms(v) {
  if (v >= 100) return sprintf("%.0f", v)
  if (v >= 1) return sprintf("%.2f", v)
  return sprintf("%.3f", v)
}
# Quantile q of stage s from its cumulative buckets (bounds ascending).
function quantile(s, q,   i, rank, prev_le, prev_c, le, c) {
  if (count[s] == 0) return "-"
  rank = q * count[s]
  prev_le = 0; prev_c = 0
  for (i = 1; i <= nb[s]; i++) {
    le = bound[s, i]; c = cum[s, i]
    if (c >= rank) {
      if (le == "+Inf") return "> " fmt_ms(prev_le * 1000)
      if (i == 1) return "<= " fmt_ms(le * 1000)
      if (c == prev_c) return fmt_ms(le * 1000)
      return fmt_ms((prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)) * 1000)
    }
    prev_le = le; prev_c = c
  }
  return "-"
}
/^parley_(stage|ack)_seconds_bucket/ {
  s = stage_of($0); if (s == "") next
  match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5)
  i = ++nb[s]; bound[s, i] = le; cum[s, i] = $NF + 0
  next
}
/^parley_(stage|ack)_seconds_sum/ { s = stage_of($0); if (s != "") sum[s] = $NF + 0; next }
/^parley_(stage|ack)_seconds_count/ { s = stage_of($0); if (s != "") count[s] = $NF + 0; next }
END {
  n = split("decode queue_wait append fanout write ack", order, " ")
  print "| stage | count | mean ms | p50 ms (approx.) | p99 ms (approx.) |"
  print "|---|---:|---:|---:|---:|"
  found = 0
  for (k = 1; k <= n; k++) {
    s = order[k]
    if (!(s in count)) continue
    found = 1
    mean = count[s] ? fmt_ms(sum[s] / count[s] * 1000) : "-"
    printf "| %s | %d | %s | %s | %s |\n", s, count[s], mean, quantile(s, 0.5), quantile(s, 0.99)
  }
  if (!found) { print "no parley_stage_seconds / parley_ack_seconds in the input" > "/dev/stderr"; exit 1 }
}'
