#!/usr/bin/env bash
# Issues 10 and 28: the WAL persister keeping up with a chat load, into
# PostgreSQL, into DynamoDB (dynalite), or both. Each run starts fresh: a
# standalone redis-server (appendonly yes, appendfsync everysec), the run's
# sinks, one Parley node on store = "valkey" and one `parley persist` on the same
# config file. PostgreSQL 15: initdb in a temp dir, run as the postgres user when
# root, fsync on (the defaults). dynalite: tests/dynamodb's (npm ci from its
# lock file when its node_modules is not current, as scripts/setup_node.sh
# does), started as the persister's tests start it, on disk (--path), at the
# bench's priority: it is a Node process sharing the same cores. parley-bench
# chat drives RATE msg/s for SECS seconds; every second the persister's /metrics
# is sampled (lag in entries and seconds, rows and items written, pending,
# errors, DynamoDB retries/throttles/unprocessed) with the CPU seconds of the
# persister, dynalite and PostgreSQL. The runs (RUNS, in order):
#   steady:     PostgreSQL, nothing else happens;
#   pg-restart: PostgreSQL, stopped (-m immediate) at SECS/2 and started again
#               PG_DOWN seconds later, under the same load;
#   dynamo:     dynalite only ([dynamodb], no [postgres]);
#   both:       PostgreSQL and dynalite (each batch acknowledged once both have it).
# After the load the script waits for the lag to reach 0 (the drain time, at
# most DRAIN_S), then checks exactly-once in each sink against what the store
# acknowledged (every channel's seq counter in Valkey): PostgreSQL, rows == the
# counters' sum, distinct (channel, seq) == rows, each channel 1..max with no
# hole; DynamoDB, a consistent Scan (tests/dynamodb/table_seqs.mjs) per
# channel: items == distinct seqs == the channel's counter == its max seq, min 1.
# persister_summary.py makes the per-run lines and the closing table
# (summary.txt; table.md).
#
# usage: bench/persister_run.sh PARLEY_BIN BENCH_BIN OUT_DIR
#   env: SECS (60), RATE (3000), CONNS (1000), CHANNEL_SIZE (2), PG_DOWN (5),
#        RUNS ("steady pg-restart"), PERSIST_THREADS (1), DRAIN_S (300)
#   e.g. bench/persister_run.sh build/src/server/parley build/tools/bench/parley-bench \
#          bench/results/$(git rev-parse --short HEAD)/persister
#   PostgreSQL beside dynalite at 6,000 msg/s:
#        RATE=6000 SECS=30 RUNS="steady dynamo both" bench/persister_run.sh ... OUT
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
threads=${PERSIST_THREADS:-1}
drain_max=${DRAIN_S:-300}
pgbin=/usr/lib/postgresql/15/bin
dyndir="$root/tests/dynamodb"
table=parley_messages

chmod 755 "$work"
pids=()
pgdata=""
dynpid=""
BENCH_SETTLE_S=0.5
bench_stop() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  [ -n "$pgdata" ] && as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true
  [ -n "$dynpid" ] && kill -TERM "$dynpid" 2>/dev/null || true
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
# (cutime, cstime) plus the children still running. Empty without PostgreSQL.
pg_cpu() {
  local pm kids t=0
  [ -n "$pgdata" ] || return 0
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
# dynalite's CPU seconds (one Node process; leveldown's threads are in it).
dyn_cpu() { [ -z "$dynpid" ] || cpu_s "$dynpid"; }
# tests/dynamodb's packages, as scripts/setup_node.sh installs them: npm ci only
# when node_modules does not match the committed lock file.
dyn_install() {
  local stamp="$dyndir/node_modules/.parley-lock"
  [ -f "$stamp" ] && cmp -s "$stamp" "$dyndir/package-lock.json" && return 0
  npm ci --prefix "$dyndir" --no-audit --no-fund --loglevel=error >&2
  cp "$dyndir/package-lock.json" "$stamp"
}
# dynalite as tests/support/dynamodb_servers.cc starts it; sets dynport, dynpid.
dyn_start() {
  dynport=$(vk_free_ports 31800 1)
  mkdir -p "$work/run/dynalite"
  local cmd=(node "$dyndir/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$dynport"
             --path "$work/run/dynalite/db" --createTableMs 50)
  # Not through run_nice (a function): $! must be node itself.
  if [ "$(id -u)" = 0 ]; then
    nice -n -15 "${cmd[@]}" > "$work/run/dynalite.log" 2>&1 &
  else
    "${cmd[@]}" > "$work/run/dynalite.log" 2>&1 &
  fi
  dynpid=$!
  for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$dynport/" && return 0
    sleep 0.1
  done
  echo "dynalite did not start (see $work/run/dynalite.log)" >&2
  return 1
}
metric() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }
psql_q() { psql -h 127.0.0.1 -p "$pgport" -U postgres -d parley -Atc "$1"; }
# The time since t0, in seconds (one decimal).
since_t0() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'; }
# The CPU seconds used since a mark: delta NOW MARK.
delta() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print ""; else printf "%.1f", a - b }'; }

# Exactly once in PostgreSQL; prints the summary's line, "ok" or "FAIL" last.
check_pg() {
  local rows distinct holes
  rows=$(psql_q "SELECT count(*) FROM parley_messages")
  distinct=$(psql_q "SELECT count(*) FROM (SELECT DISTINCT tenant, channel, seq FROM parley_messages) d")
  holes=$(psql_q "SELECT count(*) FROM (SELECT channel, count(*) c, min(seq) lo, max(seq) hi FROM parley_messages GROUP BY channel) x WHERE c <> hi OR lo <> 1")
  echo "PostgreSQL: acknowledged (Valkey seq counters) $acked, rows $rows, distinct $distinct, channels with a hole or not from 1: $holes;" \
    "$([ "$rows" = "$acked" ] && [ "$distinct" = "$rows" ] && [ "$holes" = 0 ] && echo ok || echo FAIL)"
}
# Exactly once in DynamoDB, channel by channel against Valkey's counters
# ($counters: "demo#<channel> <seq>" lines); prints the line, "ok" or "FAIL" last,
# and leaves the item size figures in $work/run/dyn_size.
check_dynamo() {
  node "$dyndir/table_seqs.mjs" "http://127.0.0.1:$dynport" "$table" > "$work/run/dyn_seqs.tsv" 2> "$out/$run.scan.log"
  grep '^#size' "$work/run/dyn_seqs.tsv" > "$work/run/dyn_size" || true
  grep -v '^#size' "$work/run/dyn_seqs.tsv" | awk -F'\t' -v acked="$acked" '
    f == 1 { want[$1] = $2; next }
    { items += $2; distinct += $3; seen[$1] = 1
      if (!($1 in want) || $2 != $3 || $4 != 1 || $5 != $2 || $2 != want[$1]) bad++ }
    END { for (c in want) if (!(c in seen)) bad++
      printf "DynamoDB: acknowledged %d, items %d, distinct %d, channels not exactly 1..their counter: %d; %s\n",
        acked, items, distinct, bad, (items == acked && distinct == items && bad == 0) ? "ok" : "FAIL" }
  ' f=1 FS=' ' "$work/run/counters" f=2 FS='\t' -
}

{
  echo "persister_run.sh: ${rate} msg/s, ${conns} connections in channels of ${chsize}, ${secs} s; runs: ${runs}; persister threads ${threads}"
  echo "commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ), uptime before: $(uptime)"
} | tee "$out/summary.txt"
summary="$out/summary.txt"
case " $runs " in *" dynamo "*|*" both "*) dyn_install ;; esac

for run in $runs; do
  case $run in
    steady|pg-restart) sinks=postgres ;;
    dynamo) sinks=dynamodb ;;
    both) sinks="postgres+dynamodb" ;;
    *) echo "unknown run $run (steady, pg-restart, dynamo, both)" >&2; exit 2 ;;
  esac
  rm -rf "$work/run" && mkdir -p "$work/run" && chmod 755 "$work/run"
  figures="$out/$run.figures"
  echo "run=$run" > "$figures"
  echo "sinks=$sinks" >> "$figures"
  # Valkey (standalone).
  rport=$(vk_free_ports 31600 1)
  rdir="$work/redis-$run"
  vk_start_node "$rdir" "$rport" everysec no
  if [[ $sinks == *postgres* ]]; then
    pgport=$(vk_free_ports 31700 1)
    pgdata="$work/run/pg"
    mkdir -p "$pgdata"
    if [ "$(id -u)" = 0 ]; then chown postgres "$work/run" "$pgdata"; fi
    as_pg "$pgbin/initdb" -D "$pgdata" -A trust -U postgres --no-sync -E UTF8 --locale C >/dev/null
    pg_start
    psql -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -qc "CREATE DATABASE parley"
  fi
  [[ $sinks == *dynamodb* ]] && dyn_start
  # The node and the persister, one config file.
  port=$(vk_free_ports 7990 1)
  mport=$(vk_free_ports 7995 1)
  conf="$work/run/parley.toml"
  parley_config "$conf" "$port" valkey "$work/run/data" "127.0.0.1:$rport" false
  {
    if [[ $sinks == *postgres* ]]; then
      echo "[postgres]"
      echo "url = \"postgresql://postgres@127.0.0.1:$pgport/parley\""
    fi
    if [[ $sinks == *dynamodb* ]]; then
      # dynalite checks no signature; the keys only have to be there.
      echo "[dynamodb]"
      echo "table = \"$table\""
      echo "region = \"us-east-1\""
      echo "endpoint = \"http://127.0.0.1:$dynport\""
      echo "access_key_id = \"AKIDPARLEYBENCH\""
      echo "secret_access_key = \"parley-bench-secret\""
    fi
    echo "[persist]"
    echo "listen = \"127.0.0.1:$mport\""
    echo "consumer = \"bench\""
    echo "threads = $threads"
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

  # One sample a second: the persister's figures and the CPU seconds so far.
  csv="$out/$run.samples.csv"
  echo "t_s,lag_entries,lag_seconds,rows_written,items_written,pending,postgres_errors,postgres_up,dynamo_retries,dynamo_throttles,dynamo_unprocessed,dynamo_errors,cpu_persister,cpu_dynalite,cpu_postgres" > "$csv"
  t0=$(date +%s.%N)
  (
    m="$work/run/sample.txt"
    while :; do
      if curl -sf -m 2 "http://127.0.0.1:$mport/metrics" > "$m"; then
        line=$(since_t0)
        for k in lag_entries lag_seconds rows_written_total dynamodb_items_written_total pending_entries \
                 postgres_errors_total postgres_up dynamodb_retries_total dynamodb_throttles_total \
                 dynamodb_unprocessed_total dynamodb_errors_total; do
          line+=",$(metric "parley_persist_$k" "$m")"
        done
        echo "$line,$(cpu_s "$persister"),$(dyn_cpu),$(pg_cpu)" >> "$csv"
      fi
      sleep 1
    done
  ) &
  sampler=$!
  pids+=("$sampler")

  cpu_server0=$(cpu_s "$server"); cpu_persist0=$(cpu_s "$persister")
  cpu_redis0=$(cpu_s "$(cat "$rdir/pid")"); cpu_pg0=$(pg_cpu); cpu_dyn0=$(dyn_cpu)
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
  load_to=$(since_t0)
  # Drain: until the persister has acknowledged everything (DRAIN_S at most).
  drain=""
  for _ in $(seq $((drain_max * 10))); do
    curl -sf "http://127.0.0.1:$mport/metrics" > "$work/run/m.txt" || true
    if [ "$(metric parley_persist_lag_entries "$work/run/m.txt")" = 0 ]; then
      drain=$(awk -v a="$(date +%s.%N)" -v b="$load_end" 'BEGIN { printf "%.1f", a - b }'); break
    fi
    sleep 0.1
  done
  kill "$sampler" 2>/dev/null || true
  # The CPU of the PostgreSQL restarted in the pg-restart run starts from 0 again:
  # its figure there is the new instance's only (the stopped one's is lost).
  [ "$run" = pg-restart ] && cpu_pg0=0
  cpu_server=$(delta "$(cpu_s "$server")" "$cpu_server0")
  cpu_persist=$(delta "$(cpu_s "$persister")" "$cpu_persist0")
  cpu_redis=$(delta "$(cpu_s "$(cat "$rdir/pid")")" "$cpu_redis0")
  cpu_pg=$(delta "$(pg_cpu)" "$cpu_pg0")
  cpu_dyn=$(delta "$(dyn_cpu)" "$cpu_dyn0")
  cp "$work/run/m.txt" "$out/$run.persist-metrics.txt"
  curl -sf "http://127.0.0.1:$port/metrics" > "$out/$run.metrics.txt" || true
  cp "$work/run/persist.log" "$out/$run.persist.log"
  [ -f "$work/run/restart.txt" ] && cp "$work/run/restart.txt" "$out/$run.restart.txt"

  # What the store acknowledged: every channel's seq counter in Valkey.
  redis-cli -p "$rport" --scan --pattern '{demo.p*}:s:*' > "$work/run/keys"
  if [ -s "$work/run/keys" ]; then
    xargs redis-cli -p "$rport" MGET < "$work/run/keys" | paste -d' ' <(sed 's/^[^:]*:s:/demo#/' "$work/run/keys") - \
      > "$work/run/counters"
  else
    : > "$work/run/counters"
  fi
  acked=$(awk '{ s += $2 } END { print s + 0 }' "$work/run/counters")
  wal_left=$(for k in $(seq 0 63); do redis-cli -p "$rport" XLEN "{demo.p$k}:w"; done | awk '{ s += $1 } END { print s + 0 }')
  checks=()
  [[ $sinks == *postgres* ]] && checks+=("$(check_pg)")
  [[ $sinks == *dynamodb* ]] && checks+=("$(check_dynamo)")
  verdict=ok
  for c in "${checks[@]}"; do [[ $c == *FAIL ]] && verdict=FAIL; done

  {
    echo "acked_per_s=$(grep -E 'msgs acked/s' "$out/$run.txt" | awk '{ print $NF }')"
    echo "drain_s=$drain"
    echo "exactly_once=$verdict"
    for k in retries throttles unprocessed; do
      echo "dynamo_$k=$(metric "parley_persist_dynamodb_${k}_total" "$work/run/m.txt")"
    done
    echo "cpu_persister_s=$cpu_persist"
    echo "cpu_dynalite_s=$cpu_dyn"
    echo "cpu_postgres_s=$cpu_pg"
  } >> "$figures"
  # The load phase's samples: from the ramp-up's end to the bench's exit.
  stats=$(python3 "$root/bench/persister_summary.py" load "$csv" 5 "$load_to" "$figures")
  {
    echo
    echo "== $run (bench exit $status; sinks: $sinks)$restart_note"
    grep -E "^  (ack) |msgs acked/s|accepted|audit:|verdict" "$out/$run.txt" || tail -20 "$out/$run.txt"
    echo "  persister during the load: $stats"
    echo "  drain after the load: lag 0 after ${drain:-(not within ${drain_max} s)} s"
    for c in "${checks[@]}"; do echo "  exactly once in $c"; done
    echo "  WAL entries left $wal_left"
    [ -s "$work/run/dyn_size" ] && awk -F'\t' '{ printf "  DynamoDB item size (as billed): mean %s B, max %s B, %d of %d over 1 KiB\n", $3, $4, $5, $2 }' "$work/run/dyn_size"
    echo "  persister totals: $(grep -E '^parley_persist_(rows_written_total|duplicate_rows_total|batches_total|reclaimed_total|postgres_errors_total|valkey_errors_total|trimmed_total|dynamodb_[a-z_]+_total) ' "$out/$run.persist-metrics.txt" | tr '\n' ' ')"
    echo "  CPU s over the run: server $cpu_server, persister $cpu_persist, redis $cpu_redis, postgres ${cpu_pg:--}, dynalite ${cpu_dyn:--}, generator: $(grep -E 'load generator CPU s' "$out/$run.txt" | awk '{ print $5 }')"
  } | tee -a "$summary"

  kill -TERM "$persister" "$server" 2>/dev/null || true
  wait "$persister" "$server" 2>/dev/null || true
  pids=()
  if [ -n "$pgdata" ]; then
    as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true
    pgdata=""
  fi
  if [ -n "$dynpid" ]; then
    kill -TERM "$dynpid" 2>/dev/null || true
    wait "$dynpid" 2>/dev/null || true
    dynpid=""
  fi
  kill -TERM "$(cat "$rdir/pid")" 2>/dev/null || true
  sleep 0.5
done
{
  echo
  python3 "$root/bench/persister_summary.py" table "$out" $runs > "$out/table.md"
  cat "$out/table.md"
  echo "uptime after: $(uptime)"
} | tee -a "$summary"
