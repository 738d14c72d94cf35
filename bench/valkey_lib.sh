# Shell helpers shared by the benchmark scripts that start their own servers
# (store_path.sh, ccu_two_nodes.sh, scaleup.sh, persister_run.sh): the common
# arguments and clean-up, redis-server nodes on loopback, Parley nodes on the
# valkey store, CPU seconds of a process. Sourced, not run. Debian's
# redis-server 7.0 speaks the protocol of Valkey; TESTING.md says how these
# machines run it.

# bench_init PARLEY_BIN BENCH_BIN OUT_DIR: sets parley and bench (absolute
# paths), out (created) and work (a new temporary folder), and arranges the
# clean-up at exit: the script's own bench_stop (when it defines one: its
# servers, generators, ...), then every redis-server under $work/redis-*, a
# pause of $BENCH_SETTLE_S seconds (0.3) for them to go, and $work removed.
bench_init() {
  parley=$(realpath "$1")
  bench=$(realpath "$2")
  out=$(mkdir -p "$3" && realpath "$3")
  work=$(mktemp -d)
  trap bench_cleanup EXIT
}

bench_cleanup() {
  if declare -F bench_stop >/dev/null; then bench_stop || true; fi
  vk_stop "$work"/redis-* 2>/dev/null
  sleep "${BENCH_SETTLE_S:-0.3}"
  rm -rf "$work"
}

# bench_summary FILE LINE: a run's summary starts with LINE, the commit, the date
# and the load; sets summary=FILE for the lines the script adds (tee -a).
bench_summary() {
  summary=$1
  {
    echo "$2"
    echo "commit $(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD), $(date -u +%FT%TZ), uptime before: $(uptime)"
  } | tee "$summary"
}

# Ports: the cluster bus of a node listens on port + 10000, so nodes take ports
# below 55536 (TESTING.md). A port is free when neither it nor its bus is bound.
vk_port_free() {
  ! ss -Htan "( sport = :$1 or sport = :$(($1 + 10000)) )" | grep -q .
}

# First of N consecutive free ports at or above $1.
vk_free_ports() {
  local p=$1 n=$2 i ok
  while :; do
    ok=1
    for ((i = 0; i < n; i++)); do
      vk_port_free $((p + i)) || { ok=0; p=$((p + i + 1)); break; }
    done
    [ $ok = 1 ] && { echo "$p"; return; }
  done
}

# vk_start_node DIR PORT [APPENDFSYNC] [CLUSTER (yes)]: a redis-server, AOF on,
# daemonized, cluster-enabled unless CLUSTER is no; its pid in DIR/pid once it
# answers PING.
vk_start_node() {
  local dir=$1 port=$2 fsync=${3:-everysec} cluster=${4:-yes}
  local cluster_args=()
  [ "$cluster" = yes ] && cluster_args=(--cluster-enabled yes --cluster-config-file "$dir/nodes.conf"
                                        --cluster-node-timeout 5000)
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$dir" \
    --pidfile "$dir/pid" --logfile "$dir/log" --save "" --appendonly yes \
    --appendfsync "$fsync" --maxmemory-policy noeviction "${cluster_args[@]}" >/dev/null
  for _ in $(seq 100); do
    if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && [ -s "$dir/pid" ]; then
      # As the server and the generator (RULES.md: benchmarks at nice -15): a node
      # left at 0 queues behind every build on the shared cores.
      [ "$(id -u)" = 0 ] && renice -n -15 -p "$(cat "$dir/pid")" >/dev/null
      return 0
    fi
    sleep 0.05
  done
  echo "redis-server on $port did not start (see $dir/log)" >&2
  return 1
}

vk_pid() { cat "$1/pid"; }

# vk_wait_ok PORT...: until every node says cluster_state:ok (30 s at most).
vk_wait_ok() {
  local p
  for _ in $(seq 300); do
    local all=1
    for p in "$@"; do
      redis-cli -p "$p" CLUSTER INFO 2>/dev/null | grep -q "cluster_state:ok" || { all=0; break; }
    done
    [ $all = 1 ] && return 0
    sleep 0.1
  done
  echo "cluster not ok on $*" >&2
  return 1
}

# vk_create_cluster PORT...: the masters (no replicas) joined and every slot served.
vk_create_cluster() {
  local args=() p
  for p in "$@"; do args+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${args[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
  vk_wait_ok "$@"
}

# vk_stop DIR...: SHUTDOWN NOSAVE each node started under DIR (its pid file).
vk_stop() {
  local d pid
  for d in "$@"; do
    [ -s "$d/pid" ] || continue
    pid=$(cat "$d/pid")
    kill -TERM "$pid" 2>/dev/null || true
  done
}

# CPU seconds (user + system) a live process has used so far; "0" once it is gone.
cpu_s() {
  local f
  f=$(cut -d')' -f2- "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  # After the command name: state is field 1, utime 12, stime 13.
  echo "$f" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }'
}

# vk_cpu_mark DIR...: remembers the CPU seconds each node under DIR has used;
# vk_cpu_used DIR... then prints " <node> <seconds since the mark>;" for each.
declare -A vk_cpu0=()
vk_cpu_mark() {
  local d
  for d in "$@"; do vk_cpu0[$d]=$(cpu_s "$(vk_pid "$d")"); done
}
vk_cpu_used() {
  local d
  for d in "$@"; do
    printf ' %s %s;' "$(basename "$d")" \
      "$(awk -v a="$(cpu_s "$(vk_pid "$d")")" -v b="${vk_cpu0[$d]:-0}" 'BEGIN { printf "%.2f", a - b }')"
  done
}

# parley_config FILE PORT STORE DATA_DIR [VALKEY_NODES (comma separated)] [CLUSTER]
#               [SERVER_LINES]
# A node's config: the bench's demo tenant with publish limits off (the load is
# the bench's), history of 1,000, the store asked for; SERVER_LINES (e.g.
# "threads = 2") go into [server].
parley_config() {
  local file=$1 port=$2 store=$3 data=$4 nodes=${5:-} cluster=${6:-true}
  [ -n "$cluster" ] || cluster=true
  {
    echo "[server]"
    echo "listen = \"127.0.0.1:$port\""
    echo "store = \"$store\""
    echo "data_dir = \"$data\""
    echo "max_connections = 30000"
    [ -z "${7:-}" ] || printf '%b\n' "$7"
    if [ "$store" = valkey ]; then
      echo "[valkey]"
      printf 'nodes = [%s]\n' "$(echo "$nodes" | sed 's/[^,][^,]*/"&"/g')"
      echo "cluster = $cluster"
      # VALKEY_TIMEOUT_MS: how long a silent node may keep commands waiting.
      echo "command_timeout_ms = ${VALKEY_TIMEOUT_MS:-2000}"
    fi
    echo "[tenants.demo]"
    echo "secret = \"demo-secret-change-me-0123456789\""
    echo "api_key = \"demo-api-key\""
    echo "max_connections = 50000"
    echo "publish_per_sec = 0"
    echo "publish_per_conn_sec = 0"
  } > "$file"
}

# parley_start BIN CONFIG LOG: the server in the background at nice -n -15 when
# root; echoes its pid once its log says ready (10 s at most).
parley_start() {
  local bin=$1 conf=$2 log=$3 pid
  if [ "$(id -u)" = 0 ]; then
    nice -n -15 "$bin" serve --config "$conf" > "$log" 2>&1 &
  else
    "$bin" serve --config "$conf" > "$log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do
    grep -q "parley ready" "$log" && { echo "$pid"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "parley did not start (see $log)" >&2
  cat "$log" >&2
  return 1
}

# Runs a command at nice -n -15 when root (RULES.md: benchmarks at -15).
run_nice() {
  if [ "$(id -u)" = 0 ]; then nice -n -15 "$@"; else "$@"; fi
}
