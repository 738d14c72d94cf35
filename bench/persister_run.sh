#!/usr/bin/env bash
# Issue 10: the WAL persister keeping up with a chat load. Each run starts fresh:
# a standalone redis-server (appendonly yes, appendfsync everysec), a PostgreSQL 15
# (initdb in a temp dir, run as the postgres user when root; fsync on, the
# defaults), one Parley node on store = "valkey" with [postgres] url, and one
# `parley persist` on the same config file. parley-bench chat drives RATE msg/s
# for SECS seconds; every second the persister's /metrics is sampled (lag in
# entries and seconds, rows written, pending, PostgreSQL errors). Two runs:
#   steady:     nothing else happens;
#   pg-restart: PostgreSQL is stopped (-m immediate) at SECS/2 and started again
#               PG_DOWN seconds later, under the same load.
# After the load the script waits for the lag to reach 0 (the drain time), then
# checks exactly-once: rows == the sum of every channel's seq counter in Valkey
# (what the store acknowledged), distinct (channel, seq) == rows, and each
# channel holds seqs 1..max with no hole.
#
# usage: bench/persister_run.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (60), RATE (3000), CONNS (1000), CHANNEL_SIZE (2), PG_DOWN (5),
#        RUNS ("steady pg-restart")
#   e.g. bench/persister_run.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/persister
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/valkey_lib.sh"
bench_init "$@"
secs=${SECS:-60}
rate=${RATE:-3000}
conns=${CONNS:-1000}
chsize=${CHANNEL_SIZE:-2}
pg_down=${PG_DOWN:-5}
runs=${RUNS:-steady pg-restart}
pgbin=/usr/lib/postgresql/15/bin

chmod 755 "$work"
pids=()
pgdata=""
BENCH_SETTLE_S=0.5
bench_stop() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  [ -n "$pgdata" ] && as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true
}

# PostgreSQL refuses root: its tools run as postgres then (TESTING.md).
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# At nice -15 like the rest of the run (its backends inherit it).
pg_start() {
  local ctl=("$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/../pg.log" -w
             -o "-p $pgport -k $pgdata -c listen_addresses=127.0.0.1" start)
  if [ "$(id -u)" = 0 ]; then
    nice -n -15 runuser -u postgres -- "${ctl[@]}" >/dev/null
  else
    "${ctl[@]}" >/dev/null
  fi
}
# CPU seconds of the PostgreSQL instance: the postmaster with its reaped children
# (cutime, cstime) plus the children still running.
pg_cpu() {
  local pm kids t=0
  pm=$(head -1 "$pgdata/postmaster.pid" 2>/dev/null) || { echo 0; return; }
  kids=$(ps -o pid= --ppid "$pm" 2>/dev/null | tr -d ' ')
  for p in $pm $kids; do
    f=$(cut -d')' -f2- "/proc/$p/stat" 2>/dev/null) || continue
    if [ "$p" = "$pm" ]; then
      t=$(echo "$f" | awk -v t="$t" '{ print t + $12 + $13 + $14 + $15 }')
    else
      t=$(echo "$f" | awk -v t="$t" '{ print t + $12 + $13 }')
    fi
  done
  awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}
metric() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }
psql_q() { psql -h 127.0.0.1 -p "$pgport" -U postgres -d parley -Atc "$1"; }

summary="$out/summary.txt"
{
  echo "persister_run.sh: ${rate} msg/s, ${conns} connections in channels of ${chsize}, ${secs} s; runs: ${runs}"
  echo "commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ), uptime before: $(uptime)"
} | tee "$summary"

for run in $runs; do
  rm -rf "$work/run" && mkdir -p "$work/run" && chmod 755 "$work/run"
  # Valkey (standalone).
  rport=$(vk_free_ports 31600 1)
  rdir="$work/redis-$run"
  vk_start_node "$rdir" "$rport" everysec no
  # PostgreSQL.
  pgport=$(vk_free_ports 31700 1)
  pgdata="$work/run/pg"
  mkdir -p "$pgdata"
  if [ "$(id -u)" = 0 ]; then chown postgres "$work/run" "$pgdata"; fi
  as_pg "$pgbin/initdb" -D "$pgdata" -A trust -U postgres --no-sync -E UTF8 --locale C >/dev/null
  pg_start
  psql -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -qc "CREATE DATABASE parley"
  # The node and the persister, one config file.
  port=$(vk_free_ports 7990 1)
  mport=$(vk_free_ports 7995 1)
  conf="$work/run/parley.toml"
  parley_config "$conf" "$port" valkey "$work/run/data" "127.0.0.1:$rport" false
  {
    echo "[postgres]"
    echo "url = \"postgresql://postgres@127.0.0.1:$pgport/parley\""
    echo "[persist]"
    echo "listen = \"127.0.0.1:$mport\""
    echo "consumer = \"bench\""
  } >> "$conf"
  cp "$conf" "$out/$run.toml"
  server=$(parley_start "$parley" "$conf" "$work/run/server.log")
  pids+=("$server")
  # Started here, not through run_nice (a function): $! must be the process itself.
  if [ "$(id -u)" = 0 ]; then
    nice -n -15 "$parley" persist --config "$conf" > "$work/run/persist.log" 2>&1 &
  else
    "$parley" persist --config "$conf" > "$work/run/persist.log" 2>&1 &
  fi
  persister=$!
  pids+=("$persister")
  for _ in $(seq 100); do grep -q "parley persist ready" "$work/run/persist.log" && break; sleep 0.1; done

  # One sample a second: seconds since the bench started, lag entries, lag
  # seconds, rows written, pending, pg errors, pg up.
  csv="$out/$run.samples.csv"
  echo "t_s,lag_entries,lag_seconds,rows_written,pending,postgres_errors,postgres_up" > "$csv"
  t0=$(date +%s.%N)
  (
    m="$work/run/sample.txt"
    while :; do
      if curl -sf -m 2 "http://127.0.0.1:$mport/metrics" > "$m"; then
        now=$(date +%s.%N)
        echo "$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'),$(metric parley_persist_lag_entries "$m"),$(metric parley_persist_lag_seconds "$m"),$(metric parley_persist_rows_written_total "$m"),$(metric parley_persist_pending_entries "$m"),$(metric parley_persist_postgres_errors_total "$m"),$(metric parley_persist_postgres_up "$m")" >> "$csv"
      fi
      sleep 1
    done
  ) &
  sampler=$!
  pids+=("$sampler")

  cpu_server0=$(cpu_s "$server"); cpu_persist0=$(cpu_s "$persister")
  cpu_redis0=$(cpu_s "$(cat "$rdir/pid")"); cpu_pg0=$(pg_cpu)
  restart_note=""
  if [ "$run" = pg-restart ]; then
    (
      sleep $((secs / 2 + 5))  # + the bench's ramp-up (setup time makes it a little earlier in the load)
      as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null
      echo "stopped $(date -u +%T.%N)" > "$work/run/restart.txt"
      sleep "$pg_down"
      pg_start
      echo "started $(date -u +%T.%N)" >> "$work/run/restart.txt"
    ) &
    restarter=$!
    restart_note=" (PostgreSQL stopped -m immediate at load second $((secs / 2)), started ${pg_down} s later)"
  fi
  set +e
  run_nice "$bench" chat --target "127.0.0.1:$port" --conns "$conns" --channel-size "$chsize" \
    --rate "$rate" --duration "$secs" --ramp-up 5 --threads 2 --no-progress \
    --server-pid "$server" --json "$out/$run.json" > "$out/$run.txt" 2>&1
  status=$?
  set -e
  [ "$run" = pg-restart ] && wait "$restarter"
  load_end=$(date +%s.%N)
  load_to=$(awk -v a="$load_end" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  # The CPU of the PostgreSQL restarted in the pg-restart run starts from 0 again:
  # its figure there is the new instance's only (the stopped one's is lost).
  cpu_pg_mid=$(pg_cpu)
  # Drain: until the persister has acknowledged everything (120 s at most).
  drain=""
  for _ in $(seq 1200); do
    curl -sf "http://127.0.0.1:$mport/metrics" > "$work/run/m.txt" || true
    if [ "$(metric parley_persist_lag_entries "$work/run/m.txt")" = 0 ]; then
      drain=$(awk -v a="$(date +%s.%N)" -v b="$load_end" 'BEGIN { printf "%.1f", a - b }'); break
    fi
    sleep 0.1
  done
  kill "$sampler" 2>/dev/null || true
  cpu_server=$(awk -v a="$(cpu_s "$server")" -v b="$cpu_server0" 'BEGIN { printf "%.1f", a - b }')
  cpu_persist=$(awk -v a="$(cpu_s "$persister")" -v b="$cpu_persist0" 'BEGIN { printf "%.1f", a - b }')
  cpu_redis=$(awk -v a="$(cpu_s "$(cat "$rdir/pid")")" -v b="$cpu_redis0" 'BEGIN { printf "%.1f", a - b }')
  cpu_pg=$(awk -v a="$(pg_cpu)" -v b="$cpu_pg0" -v r="$run" 'BEGIN { if (r == "pg-restart") b = 0; printf "%.1f", a - b }')
  cp "$work/run/m.txt" "$out/$run.persist-metrics.txt"
  curl -sf "http://127.0.0.1:$port/metrics" > "$out/$run.metrics.txt" || true
  cp "$work/run/persist.log" "$out/$run.persist.log"
  [ -f "$work/run/restart.txt" ] && cp "$work/run/restart.txt" "$out/$run.restart.txt"

  # Exactly once: PostgreSQL against Valkey's seq counters (what the store acknowledged).
  acked=$(redis-cli -p "$rport" --scan --pattern '{demo.p*}:s:*' | while read -r k; do redis-cli -p "$rport" GET "$k"; done |
    awk '{ s += $1 } END { print s + 0 }')
  rows=$(psql_q "SELECT count(*) FROM parley_messages")
  distinct=$(psql_q "SELECT count(*) FROM (SELECT DISTINCT tenant, channel, seq FROM parley_messages) d")
  holes=$(psql_q "SELECT count(*) FROM (SELECT channel, count(*) c, min(seq) lo, max(seq) hi FROM parley_messages GROUP BY channel) x WHERE c <> hi OR lo <> 1")
  wal_left=$(for k in $(seq 0 63); do redis-cli -p "$rport" XLEN "{demo.p$k}:w"; done | awk '{ s += $1 } END { print s + 0 }')

  # The load phase's samples: from the ramp-up's end to the bench's exit.
  stats=$(awk -F, -v from=5 -v to="$load_to" 'BEGIN { mle = 0; mls = 0 } NR > 1 && $1 >= from && $1 <= to && $4 != "" {
      n++; le[n] = $2; ls[n] = $3; if ($2 > mle) mle = $2; if ($3 > mls) mls = $3
      if (n == 1) r0 = $4; r1 = $4; t0 = (n == 1 ? $1 : t0); t1 = $1 }
    function median(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { if (n < 2) { print "no samples"; exit }
      printf "lag entries median %s max %s; lag seconds median %.3f max %.3f; rows written %.0f/s over %d samples",
        median(le, n), mle, median(ls, n), mls, (r1 - r0) / (t1 - t0), n }' "$csv")
  {
    echo
    echo "== $run (bench exit $status)$restart_note"
    grep -E "^  (ack) |msgs acked/s|accepted|audit:|verdict" "$out/$run.txt" || tail -20 "$out/$run.txt"
    echo "  persister during the load: $stats"
    echo "  drain after the load: lag 0 after ${drain:-(not within 120 s)} s"
    echo "  exactly once: acknowledged (Valkey seq counters) $acked, rows $rows, distinct $distinct, channels with a hole or not from 1: $holes; WAL entries left $wal_left"
    echo "  persister totals: $(grep -E '^parley_persist_(rows_written_total|duplicate_rows_total|batches_total|reclaimed_total|postgres_errors_total|valkey_errors_total|trimmed_total) ' "$out/$run.persist-metrics.txt" | tr '\n' ' ')"
    echo "  CPU s over the run: server $cpu_server, persister $cpu_persist, redis $cpu_redis, postgres $cpu_pg, generator: $(grep -E 'load generator CPU s' "$out/$run.txt" | awk '{ print $5 }')"
  } | tee -a "$summary"

  kill -TERM "$persister" "$server" 2>/dev/null || true
  wait "$persister" "$server" 2>/dev/null || true
  pids=()
  as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true
  pgdata=""
  kill -TERM "$(cat "$rdir/pid")" 2>/dev/null || true
  sleep 0.5
done
echo "uptime after: $(uptime)" | tee -a "$summary"
