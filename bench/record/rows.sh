# shellcheck shell=bash disable=SC2154  # root, parley, bench, out, quick, peers, server_cpus, bench_cpus: set by record.sh
# The rows of the record, in the order bench/record.sh runs them. Sourced by
# record.sh, which sets: root (the source tree), parley, bench (binaries), out (this
# run's folder), quick (1 for the smoke test), server_cpus / bench_cpus (the split),
# peers (targets besides Parley that this machine has: "bun" or ""). Each row_NAME
# DIR runs one workload with its reports in DIR and calls `emit` once per figure;
# its exit status says whether it ran. Full runs use the record's commands
# (bench/record.tsv's command column); --quick runs each shape for a second or two
# with few connections, to prove the row still runs, not to measure it.

# q FULL QUICK: the argument string for this mode.
q() { if [ "$quick" = 1 ]; then echo "$2"; else echo "$1"; fi; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A port P with P + 1 free as well (idle_memory.sh's server also listens on P + 1).
free_port_pair() {
  python3 - <<'EOF'
import socket
for _ in range(100):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
    except OSError:
        continue
    print(p)
    break
EOF
}

val() { python3 "$root/bench/record/value.py" "$@"; }

. "$root/bench/valkey_lib.sh"  # parley_config, parley_start

# A Parley config on the embedded store (valkey_lib.sh's, limits out of the way)
# with the namespaces the rows use: parley_toml DIR PORT [SERVER_LINES]
parley_toml() {
  parley_config "$1/parley.toml" "$2" embedded "$1/data" "" "" "${3:-}"
  cat >> "$1/parley.toml" <<EOF
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
[tenants.demo.namespaces.tmp]
durable = false
history_ttl_s = 60
dedupe_window_s = 30
EOF
}

# start_parley DIR: a fresh server on DIR/parley.toml, ready; sets SP.
start_parley() {
  rm -rf "$1/data"
  SP=$(parley_start "$parley" "$1/parley.toml" "$1/server.log")
}

# stop_parley DIR: SIGTERM, until it is gone (it is parley_start's child, not ours).
stop_parley() {
  [ -n "${SP:-}" ] || return 0
  kill -TERM "$SP" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$SP" 2>/dev/null || break; sleep 0.05; done
  SP=""
  rm -rf "$1/data"
}

# run_script DIR SCRIPT "ENV": one of bench/'s scripts (PARLEY BENCH OUT) with
# ENV, its output in DIR/run.txt; its status.
run_script() {
  # shellcheck disable=SC2086
  env $3 bash "$root/bench/$2" "$parley" "$bench" "$1" > "$1/run.txt" 2>&1
}

# needs DIR CMD...: status 3 (skipped, DIR/skipped says why) unless every CMD exists.
needs() {
  local d=$1 c; shift
  for c in "$@"; do
    command -v "$c" > /dev/null || [ -x "$c" ] || { echo "no $c" > "$d/skipped"; return 3; }
  done
}

# quick_skip DIR WHY: a row --quick leaves out (QUICK_ALL=1 runs it); status 3.
quick_skip() {
  [ "$quick" = 1 ] && [ -z "${QUICK_ALL:-}" ] || return 1
  echo "in --quick: $2 (QUICK_ALL=1 runs it)" > "$1/skipped"
}

# chat-6k: 10,000 connections in channels of 20, 6,000 durable msg/s.
row_chat_6k() {
  local d=$1 port; port=$(free_port)
  parley_toml "$d" "$port"
  start_parley "$d" || return 1
  local args; args=$(q "--duration 60 --ramp-up 10 --threads 2" \
                       "--conns 200 --rate 200 --duration 0.5 --ramp-up 0 --drain 1")
  # shellcheck disable=SC2086
  "$bench" chat-6k $args --target "127.0.0.1:$port" --server-pid "$SP" --no-progress \
    --json "$d/chat-6k.json" --html "$d/chat-6k.html" > "$d/chat-6k.txt" 2>&1
  local rc=$?
  curl -s "http://127.0.0.1:$port/metrics" > "$d/metrics.txt"
  stop_parley "$d"
  sh "$root/bench/stage_breakdown.sh" "$d/metrics.txt" > "$d/stages.txt" 2>/dev/null
  emit chat-6k.ack_p99 "$(val json "$d/chat-6k.json" latency_ms.ack.p99)" "" \
    "parley-bench chat-6k $args" chat-6k/chat-6k.txt \
    "acked/s $(val json "$d/chat-6k.json" figures.msgs_per_s), lost $(val json "$d/chat-6k.json" audit.lost)"
  emit chat-6k.per_cpu "$(val json "$d/chat-6k.json" figures.deliveries_per_server_cpu_s)" "" \
    "(same run)" chat-6k/chat-6k.json ""
  return $rc
}

# ccu-soak: 19,000 connections held 300 s.
row_ccu_soak() {
  local d=$1 port; port=$(free_port)
  parley_toml "$d" "$port"
  start_parley "$d" || return 1
  local args; args=$(q "" "--conns 200 --duration 0.5 --ramp-up 0 --drain 1")
  # shellcheck disable=SC2086
  "$bench" ccu-soak $args --target "127.0.0.1:$port" --server-pid "$SP" --no-progress \
    --json "$d/ccu-soak.json" --html "$d/ccu-soak.html" > "$d/ccu-soak.txt" 2>&1
  local rc=$?
  stop_parley "$d"
  emit ccu-soak.held "$(val json "$d/ccu-soak.json" figures.conns_held)" "" \
    "parley-bench ccu-soak $args" ccu-soak/ccu-soak.txt \
    "disconnects $(val json "$d/ccu-soak.json" counters.disconnects)"
  return $rc
}

# 20,002 connections on two nodes sharing a 3-master cluster.
row_ccu_two_nodes() {
  local d=$1
  needs "$d" redis-server || return 3
  local env; env=$(q "RAMP=90" "SECS=1 PER_NODE=20 RAMP=0 RATE=10")
  run_script "$d" ccu_two_nodes.sh "$env"
  local rc=$?
  emit ccu-soak.two_nodes "$(val re "$d/summary.txt" 'total: ready \d+, held (\d+)')" "" \
    "$env bench/ccu_two_nodes.sh PARLEY BENCH OUT" ccu_two_nodes/summary.txt \
    "$(val re "$d/summary.txt" 'total: .*?(disconnects \d+, failed \(re\)connects \d+)')"
  return $rc
}

# world-6k: 6,000 avatars in 60 worlds of 100.
row_world_6k() {
  local d=$1 port; port=$(free_port)
  parley_toml "$d" "$port"
  start_parley "$d" || return 1
  local args; args=$(q "--duration 60 --threads 2" "--conns 200 --duration 0.5 --ramp-up 0 --drain 1")
  # shellcheck disable=SC2086
  "$bench" world-6k $args --target "127.0.0.1:$port" --server-pid "$SP" --no-progress \
    --json "$d/world-6k.json" --html "$d/world-6k.html" > "$d/world-6k.txt" 2>&1
  local rc=$?
  stop_parley "$d"
  emit world-6k.per_cpu "$(val json "$d/world-6k.json" figures.deliveries_per_server_cpu_s)" "" \
    "parley-bench world-6k $args" world-6k/world-6k.txt \
    "generator behind: $(val json "$d/world-6k.json" generator.behind)"
  return $rc
}

# world-big: one world of 6,000 avatars with interest areas; and its tick intervals.
row_world_big() {
  local d=$1
  local args; args=$(q "" "--conns 300 --duration 0.5 --ramp-up 0 --drain 1")
  # shellcheck disable=SC2086
  PORT=$(free_port) bash "$root/bench/worlds/world_big.sh" "$parley" "$bench" "$d" $args > /dev/null 2>&1
  local rc=$?
  emit world-big.per_cpu "$(val json "$d/world-big.json" figures.deliveries_per_server_cpu_s)" "" \
    "bench/worlds/world_big.sh PARLEY BENCH OUT $args" world-big/world-big.txt \
    "generator behind: $(val json "$d/world-big.json" generator.behind)"
  tick_emit tick.worldbig "$d/world-big.json" "(same run)" world-big/world-big.json
  return $rc
}

# tick_emit ID JSON COMMAND REPORT: p99 of the tick deviation, p50 and max beside it.
tick_emit() {
  emit "$1" "$(val json "$2" latency_ms.tick_dev.p99)" "" "$3" "$4" \
    "p50 $(val json "$2" latency_ms.tick_dev.p50) ms, max $(val json "$2" latency_ms.tick_dev.max) ms; interval p50 $(val json "$2" latency_ms.tick_interval.p50) ms"
}

# One compare: compare_row ID DIR NAME SPLIT(0|1) TARGETS ARGS...; emits Parley's
# deliveries per CPU-second and each peer's ratio (Parley / peer).
compare_row() {
  local id=$1 d=$2 name=$3 split=$4 targets=$5; shift 5
  local pin=""
  [ "$split" = 1 ] && pin="--server-cpus $server_cpus --bench-cpus $bench_cpus"
  local dur; dur=$(q "--duration 15 --threads 2" "--duration 0.5 --ramp-up 0 --drain 1")
  # shellcheck disable=SC2086
  "$bench" compare "$@" --targets "$targets" $dur $pin --parley-bin "$parley" \
    --peers-dir "$root/bench" --no-progress --json "$d/$name.json" --html "$d/$name.html" \
    > "$d/$name.txt" 2> "$d/$name.err"
  local rc=$?
  local mine peer ratio="" t
  mine=$(val json "$d/$name-parley.json" figures.deliveries_per_server_cpu_s)
  for t in ${targets//,/ }; do
    [ "$t" = parley ] && continue
    peer=$(val json "$d/$name-$t.json" figures.deliveries_per_server_cpu_s)
    [ -n "$peer" ] && [ -n "$mine" ] &&
      ratio="$ratio${ratio:+; }$(python3 -c "import sys; a, b, t = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]; print(f'floor {b/a:.2f}×' if t == 'floor' else f'{a/b:.2f}× {t}')" "$mine" "$peer" "$t" 2>/dev/null)"
  done
  emit "$id" "$mine" "$ratio" "parley-bench compare $* --targets $targets $dur $pin" \
    "compares/$name.txt" "$( [ "$split" = 1 ] && echo "split: Parley on CPUs $server_cpus, generator on $bench_cpus" || echo "shared cores")"
  return $rc
}

# The compares at two loads, shared cores and split.
row_compares() {
  local d=$1 rc=0 s sfx
  local floor=floor; local bun=${peers:+,$peers}
  if [ "$quick" = 1 ]; then  # one shared compare with the peers (floor_test has the floor), one split
    compare_row room200 "$d" room200 0 "parley$bun" chat --ns room --conns 200 --rate 200 || rc=1
    # (chat at 50 msg/s, not the shape's 5: a second of load must get pubs acked)
    compare_row world.1x.split "$d" world-1x.split 1 parley world --load-x 1 --rate 50 || rc=1
    tick_emit tick.world1x "$d/world-1x.split-parley.json" "(compare world 1×, split)" compares/world-1x.split-parley.json
    return $rc
  fi
  for s in 0 1; do
    sfx=$([ "$s" = 1 ] && echo .split)
    compare_row "room200$sfx" "$d" "room200$sfx" $s "parley$bun,$floor" chat --ns room --conns 200 --rate 200 || rc=1
    if [ "$quick" = 0 ]; then
      compare_row "room2000$sfx" "$d" "room2000$sfx" $s "parley$bun,$floor" chat --ns room --conns 2000 --rate 2000 || rc=1
      compare_row "durable200$sfx" "$d" "durable200$sfx" $s "parley$bun" chat --conns 200 --rate 200 || rc=1
      compare_row "broadcast.1x$sfx" "$d" "broadcast-1x$sfx" $s "parley$bun" broadcast --load-x 1 || rc=1
      compare_row "broadcast.5x$sfx" "$d" "broadcast-5x$sfx" $s "parley$bun" broadcast --load-x 5 || rc=1
      compare_row "world.5x$sfx" "$d" "world-5x$sfx" $s "parley$bun" world --load-x 5 || rc=1
    fi
    compare_row "world.1x$sfx" "$d" "world-1x$sfx" $s "parley$bun" world --load-x 1 || rc=1
  done
  tick_emit tick.world1x "$d/world-1x.split-parley.json" "(compare world 1×, split)" compares/world-1x.split-parley.json
  tick_emit tick.world5x "$d/world-5x.split-parley.json" "(compare world 5×, split)" compares/world-5x.split-parley.json
  return $rc
}

# Capacity: each target's rate raised to its cliff, split cores.
row_capacity() {
  local d=$1 rc=0 id shape name
  local steps; steps=$(q "--step-s 5 --max-steps 12" "--step-s 1 --max-steps 1")
  local shapes=("capacity.room chat --ns room --conns 200 --rate 200" "capacity.world world --load-x 1")
  local peers=$peers
  [ "$quick" = 1 ] && { shapes=("capacity.world world --load-x 1 --rate 50"); peers=""; }  # the state ramp, Parley alone
  for shape in "${shapes[@]}"; do
    set -- $shape
    id=$1; shift; name=${id#capacity.}
    # shellcheck disable=SC2086
    "$bench" compare "$@" --ramp $steps --ramp-up "$(q 2 0)" --drain "$(q 5 1)" --threads "$(q 2 1)" \
      --targets "parley${peers:+,$peers}" --server-cpus "$server_cpus" --bench-cpus "$bench_cpus" \
      --parley-bin "$parley" --peers-dir "$root/bench" --no-progress --json "$d/$name.json" \
      > "$d/$name.txt" 2> "$d/$name.err" || rc=1
    local mine peer ratio=""
    mine=$(val ramp "$d/$name-parley.json")
    if [ -n "$peers" ]; then
      peer=$(val ramp "$d/$name-$peers.json")
      ratio=$(python3 -c "import sys; a, b, t = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]; print(f'{a/b:.2f}× {t}' if b else f'{t} held none')" "$mine" "$peer" "$peers" 2>/dev/null)
    fi
    emit "$id" "$mine" "$ratio" "parley-bench compare $* --ramp $steps --targets parley${peers:+,$peers} --server-cpus $server_cpus --bench-cpus $bench_cpus" \
      "capacity/$name.txt" "$(grep -m1 -E '^  parley ' "$d/$name.txt" | sed 's/  */ /g' | cut -c2-)"
  done
  return $rc
}

# Events: 35,000/s (with Redis Streams beside it), 60,000/s, 100,000/s without ids.
row_events() {
  local d=$1 rc=0
  local redis=""; command -v redis-server > /dev/null && redis="--redis $(command -v redis-server)"
  events_run() {  # name args...
    local name=$1; shift
    # shellcheck disable=SC2086
    PARLEY_BIN=$parley PARLEY_BENCH_BIN=$bench PARLEY_EVENTS_PORT=$(free_port) \
      bash "$root/bench/events.sh" hunt-20k "$@" > "$d/$name.txt" 2>&1 || rc=1
  }
  if [ "$quick" = 1 ]; then
    events_run events-35k --rate 2000 --duration 1 --drain 2 $redis
  else
    events_run events-35k --duration 45 --drain 15 $redis
    events_run events-60k --rate 60000 --conns 6 --duration 30 --drain 15
    events_run events-100k --rate 100000 --conns 8 --no-ids --duration 30 --drain 15
  fi
  emit events.35k "$(val re "$d/events-35k.txt" 'group 0: .*emit->receive p50 \S+ ms p99 (\S+) ms')" \
    "$(val re "$d/events-35k.txt" 'redis / parley: (.*)')" "bench/events.sh hunt-20k $(q '--duration 45 --drain 15' '--rate 2000 --duration 1 --drain 2') $redis" \
    events/events-35k.txt "$(val re "$d/events-35k.txt" '(acked \d+ \(\d+/s\))')"
  if [ "$quick" = 0 ]; then
    emit events.60k "$(val re "$d/events-60k.txt" 'group 0: .*emit->receive p50 \S+ ms p99 (\S+) ms')" "" \
      "bench/events.sh hunt-20k --rate 60000 --conns 6 --duration 30 --drain 15" events/events-60k.txt \
      "$(val re "$d/events-60k.txt" '(acked \d+ \(\d+/s\))')"
    emit events.100k "$(val re "$d/events-100k.txt" 'server: .* peak (\S+) MiB')" "" \
      "bench/events.sh hunt-20k --rate 100000 --conns 8 --no-ids --duration 30 --drain 15" events/events-100k.txt \
      "$(val re "$d/events-100k.txt" '(acked \d+ \(\d+/s\))')"
  fi
  return $rc
}

# Idle memory: the idle process, and per idle connection (VmRSS and anonymous).
row_idle() {
  local d=$1 n; n=$(q 5000 200)
  PARLEY_MEM_PORT=$(free_port_pair) IDLE_HOLD_S=$(q 12 1) IDLE_RAMP_S=$(q 4 1) bash "$root/bench/idle_memory.sh" "$n" "$parley" "$bench" > "$d/idle-memory.txt" 2>&1
  local rc=$?
  emit idle.rss "$(val re "$d/idle-memory.txt" '^idle VmRSS KiB (\d+)' | awk '{printf "%.1f", $1/1024}')" "" \
    "bench/idle_memory.sh $n PARLEY BENCH" idle/idle-memory.txt "one start"
  emit idle.per_conn "$(val re "$d/idle-memory.txt" '^bytes per connection above idle (-?\d+)')" "" \
    "bench/idle_memory.sh $n PARLEY BENCH" idle/idle-memory.txt "VmRSS, $n connections"
  emit idle.per_conn_anon "$(val re "$d/idle-memory.txt" '^anonymous bytes per connection above idle (-?\d+)')" "" \
    "bench/idle_memory.sh $n PARLEY BENCH" idle/idle-memory.txt "RssAnon, $n connections"
  return $rc
}

# The store path on a 3-master cluster at the reference rate.
row_store_path() {
  local d=$1
  needs "$d" redis-server || return 3
  local env; env=$(q "SECS=45" "SECS=1 RATE=200 CONNS=100 RUNS=valkey RAMP=0")
  run_script "$d" store_path.sh "$env"
  local rc=$?
  emit store.valkey "$(val re "$d/summary.txt" '== valkey[^\n]*\n\s+ack\s+\S+\s+(\S+)')" \
    "$(val re "$d/summary.txt" '== embedded[^\n]*\n\s+ack\s+\S+\s+(\S+)' | sed 's/^/embedded p95 /;s/$/ ms/')" \
    "$env bench/store_path.sh PARLEY BENCH OUT" store-path/summary.txt \
    "$(val re "$d/summary.txt" '== valkey[^\n]*\n\s+ack\s+\S+\s+\S+\s+(\S+)' | sed 's/^/p99 /;s/$/ ms/')"
  return $rc
}

# Online scale-up: a 4th master joins under load.
row_scaleup() {
  local d=$1
  quick_skip "$d" "moving 4,096 slots alone takes ~20 s" && return 3
  needs "$d" redis-server || return 3
  local env; env=$(q "SECS=100 WARM=20" "SECS=4 WARM=1 CONNS=50 RATE=100")
  run_script "$d" scaleup.sh "$env"
  local rc=$?
  emit scaleup.lost "$(val re "$d/summary.txt" 'acknowledged messages lost \(audit\): lost (\d+)')" "" \
    "$env bench/scaleup.sh PARLEY BENCH OUT" scaleup/summary.txt \
    "$(val re "$d/summary.txt" '(rejections retried by clients: unavailable \d+)')"
  return $rc
}

# The persister: lag to PostgreSQL, steady and across a PostgreSQL restart.
row_persister() {
  local d=$1
  quick_skip "$d" "a PostgreSQL initdb and start take ~10 s" && return 3
  needs "$d" redis-server /usr/lib/postgresql/15/bin/initdb || return 3
  local env; env=$(q "SECS=40" "SECS=2 RATE=200 CONNS=50 RUNS=steady")
  run_script "$d" persister_run.sh "$env"
  local rc=$?
  emit persister.lag "$(val re "$d/summary.txt" '== steady(?:.|\n)*?lag seconds median \S+ max ([\d.]+)')" "" \
    "$env bench/persister_run.sh PARLEY BENCH OUT" persister/summary.txt \
    "$(val re "$d/summary.txt" '== pg-restart(?:.|\n)*?lag seconds median \S+ max ([\d.]+)' | sed 's/^/PostgreSQL restarted: max /;s/$/ s/')"
  return $rc
}

# Churn: fresh channels joined, published to and left, durable and not, at once.
row_churn() {
  local d=$1 port; port=$(free_port)
  parley_toml "$d" "$port" "threads = 2\nchannel_idle_s = 30"
  start_parley "$d" || return 1
  local n1 n2 dur; n1=$(q 700000 300); n2=$(q 700000 300); dur=$(q 240 5)
  "$bench" churn --target "127.0.0.1:$port" --ns chat --conns "$(q 48 4)" --churn-channels "$n1" \
    --duration "$dur" --churn-idle-s "$(q 80 1)" --server-pid "$SP" --no-progress \
    --json "$d/churn-chat.json" > "$d/churn-chat.txt" 2>&1 &
  local b1=$!
  "$bench" churn --target "127.0.0.1:$port" --ns tmp --conns "$(q 16 4)" --churn-channels "$n2" \
    --duration "$dur" --churn-idle-s "$(q 80 1)" --server-pid "$SP" --no-progress \
    --json "$d/churn-tmp.json" > "$d/churn-tmp.txt" 2>&1 &
  local b2=$! rc=0
  wait $b1 || rc=1
  wait $b2 || rc=1
  local rss; rss=$(awk '/^VmRSS/{printf "%.1f", $2/1024}' "/proc/$SP/status" 2>/dev/null)
  stop_parley "$d"
  local made
  made=$(python3 - "$d" <<'EOF'
import json, re, sys
n = 0
for f in ("churn-chat.txt", "churn-tmp.txt"):
    m = re.search(r"^churn: (\d+) channels", open(f"{sys.argv[1]}/{f}").read(), re.M)
    n += int(m.group(1)) if m else 0
print(n)
EOF
)
  emit churn.channels "$made" "" "parley-bench churn --ns chat --conns $(q 48 4) & --ns tmp --conns $(q 16 4), --churn-channels $n1 each, $dur s" \
    churn/churn-chat.txt "RSS ${rss:-?} MiB at the end"
  return $rc
}

# The ramps of the earlier record (rate and state steps until the p99 bound).
row_ramps() {
  local d=$1 port rc=0; port=$(free_port)
  parley_toml "$d" "$port"
  start_parley "$d" || return 1
  local quickargs="--conns 100 --max-steps 1 --step-s 1 --ramp-up 0 --drain 1"
  # shellcheck disable=SC2046,SC2086
  "$bench" ramp $(q "--rate 500 --max-p99-ms 100" "$quickargs") --target "127.0.0.1:$port" \
    --server-pid "$SP" --no-progress --json "$d/ramp.json" --html "$d/ramp.html" > "$d/ramp.txt" 2>&1 || rc=1
  emit ramp.chat "$(val ramp "$d/ramp.json")" "" "parley-bench ramp $(q "--rate 500 --max-p99-ms 100" "$quickargs")" ramps/ramp.txt ""
  if [ "$quick" = 0 ]; then
    "$bench" ramp-world --target "127.0.0.1:$port" --server-pid "$SP" --no-progress \
      --json "$d/ramp-world.json" --html "$d/ramp-world.html" > "$d/ramp-world.txt" 2>&1 || rc=1
    emit ramp.world "$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(max(s['state_deliveries_per_s'] for s in j['steps'] if s['held']))" "$d/ramp-world.json" 2>/dev/null)" "" \
      "parley-bench ramp-world" ramps/ramp-world.txt ""
    "$bench" ramp --conns 10000 --channel-size 20 --rate 500 --max-steps 8 --max-p99-ms 30 --threads 2 \
      --target "127.0.0.1:$port" --server-pid "$SP" --no-progress --json "$d/ramp-10k.json" \
      --html "$d/ramp-10k.html" > "$d/ramp-10k.txt" 2>&1 || rc=1
    emit ramp.10k "$(val ramp "$d/ramp-10k.json")" "" \
      "parley-bench ramp --conns 10000 --channel-size 20 --rate 500 --max-steps 8 --max-p99-ms 30 --threads 2" ramps/ramp-10k.txt ""
  fi
  stop_parley "$d"
  return $rc
}

# What a client reading history costs the others: ack p99 with ÷ without.
row_history() {
  local d=$1 secs; secs=$(q 30 1)
  needs "$d" node || return 3
  # --quick: only the run with the history loop (the one with more to go wrong).
  [ "$quick" = 0 ] &&
    PARLEY_HIST_PORT=$(free_port) CONNS=1000 RATE=1000 bash "$root/bench/history_under_load.sh" "$parley" "$bench" without "$secs" > "$d/without.txt" 2>&1
  PARLEY_HIST_PORT=$(free_port) CONNS=$(q 1000 40) RATE=$(q 1000 40) bash "$root/bench/history_under_load.sh" "$parley" "$bench" with "$secs" > "$d/with.txt" 2>&1
  local a b
  a=$(val re "$d/with.txt" '^  ack\s+\S+\s+\S+\s+(\S+)'); b=$(val re "$d/without.txt" '^  ack\s+\S+\s+\S+\s+(\S+)')
  grep -q '^history loop: ' "$d/with.txt" || return 1
  local ratio
  ratio=$(python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "$a" "$b" 2>/dev/null)
  [ "$quick" = 1 ] && ratio=$a  # no run without: the value is the ack p99 with (ms)
  emit history.load "$ratio" "" \
    "bench/history_under_load.sh PARLEY BENCH with|without $secs" history/with.txt "ack p99 $a ms with, ${b:-no run} without (one round)"
}

# The way back: an app server publishing over HTTP in batches of 50.
row_wayback() {
  local d=$1
  needs "$d" node || return 3
  PORT=$(free_port) TCP=$(free_port) MODES="http-batch:4" BATCH=50 DURATION=$(q 10 1) \
    bash "$root/bench/worlds/way_back.sh" "$parley" "$d" > "$d/run.txt" 2>&1
  local rc=$?
  emit wayback.batch "$(val json "$d/way-back-http-batch-4.json" server_us_per_msg)" "" \
    "MODES=http-batch:4 BATCH=50 bench/worlds/way_back.sh PARLEY OUT" way-back/way-back.txt \
    "$(val json "$d/way-back-http-batch-4.json" msgs_per_s | cut -d. -f1) msgs/s"
  return $rc
}

# The cost of fsync = "always" at a steady 2,000 msg/s, paired with "never" in turns
# (tests/powerloss/fsync_cost.sh: fresh servers, data on the real disk).
row_durability() {
  local d=$1 env rounds
  env=$(q "SECS=12" "SECS=1 CONNS=20 RATE=200 FLOOD=0"); rounds=$(q 2 1)
  # shellcheck disable=SC2086
  env $env DIR="$d/runs" bash "$root/tests/powerloss/fsync_cost.sh" "$parley" "$bench" "$rounds" > "$d/fsync-cost.txt" 2>&1
  local rc=$?
  local f="$d/fsync-cost.txt"
  emit durability.fsync_p50 "$(val re "$f" '^median fixed always: .*ack p50 (\S+) ms')"     "$(val re "$f" '^median fixed never : .*ack p50 (\S+) ms' | sed 's/^/never /;s/$/ ms/')"     "$env tests/powerloss/fsync_cost.sh PARLEY BENCH $rounds" durability/fsync-cost.txt     "p99 $(val re "$f" '^median fixed always: .*p99 (\S+) ms') ms (never $(val re "$f" '^median fixed never : .*p99 (\S+) ms') ms); server CPU $(val re "$f" '^median fixed always: .*server CPU (\S+) s') s (never $(val re "$f" '^median fixed never : .*server CPU (\S+) s') s)"
  [ "$quick" = 1 ] || emit durability.fsync_flood "$(val re "$f" '^median flood always: acked/s (\S+)')"     "$(val re "$f" '^median flood never : acked/s (\S+)' | sed 's/^/never /')"     "(same run)" durability/fsync-cost.txt "40,000 msg/s offered"
  rm -rf "$d/runs"
  return $rc
}

# Power loss under load (tests/powerloss: a FUSE file system that forgets what was
# not fsynced): the test binary of a build with tests, root and /dev/fuse.
row_powerloss() {
  local d=$1 n; n=$(q 50 2)
  quick_skip "$d" "two settings x 50 power losses take ~10 min" && return 3
  [ -n "${POWERLOSS_TEST:-}" ] && [ -x "$POWERLOSS_TEST" ] ||
    { echo "POWERLOSS_TEST (a build's tests/powerloss_test) not given" > "$d/skipped"; return 3; }
  [ "$(id -u)" = 0 ] && [ -w /dev/fuse ] || { echo "needs root and /dev/fuse" > "$d/skipped"; return 3; }
  PARLEY_TEST_BIN=$parley POWERLOSS_ROUNDS=$n "$POWERLOSS_TEST" > "$d/powerloss.txt" 2>&1
  local rc=$?
  local f="$d/powerloss.txt" cmd="POWERLOSS_ROUNDS=$n build/tests/powerloss_test (root, /dev/fuse)"
  emit powerloss.always_lost "$(val re "$f" '^powerloss: fsync=always .* lost_acked_total=(\d+)')" "" \
    "$cmd" powerloss/powerloss.txt \
    "$(val re "$f" '^powerloss: fsync=always losses=(\d+)') losses; $(val re "$f" '^powerloss: fsync=always .* acked_msgs=(\d+)') messages + $(val re "$f" '^powerloss: fsync=always .* acked_events=(\d+)') events acked; seq reused $(val re "$f" '^powerloss: fsync=always .* seq_reused=(\d+)'), holes $(val re "$f" '^powerloss: fsync=always .* holes=(\d+)')"
  emit powerloss.never_lost "$(val re "$f" '^powerloss: fsync=never .* lost_per_loss_median=(\d+)')" "" \
    "(same run)" powerloss/powerloss.txt \
    "max $(val re "$f" '^powerloss: fsync=never .* lost_per_loss_max=(\d+)') per loss; $(val re "$f" '^powerloss: fsync=never .* acked_msgs=(\d+)') messages + $(val re "$f" '^powerloss: fsync=never .* acked_events=(\d+)') events acked; seq reused $(val re "$f" '^powerloss: fsync=never .* seq_reused=(\d+)'), holes $(val re "$f" '^powerloss: fsync=never .* holes=(\d+)')"
  return $rc
}

# Every row, in the record's order: name, function, the folder its reports go to.
# shellcheck disable=SC2034  # read by record.sh
RECORD_ROWS="chat-6k:row_chat_6k ccu-soak:row_ccu_soak ccu_two_nodes:row_ccu_two_nodes
world-6k:row_world_6k world-big:row_world_big compares:row_compares capacity:row_capacity
events:row_events idle:row_idle store-path:row_store_path scaleup:row_scaleup
persister:row_persister churn:row_churn ramps:row_ramps history:row_history way-back:row_wayback
durability:row_durability powerloss:row_powerloss"
