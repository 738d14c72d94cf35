# conf.sh: conf DIR PORT writes DIR/p.toml (the compare's config: `chat` is durable by
# default, `room` is not; FSYNC=always adds fsync = "always"); sourced by the scripts.
conf() {
  mkdir -p $1/data
  cat > $1/p.toml <<T
[server]
listen = "127.0.0.1:$2"
store = "embedded"
data_dir = "$1/data"
${FSYNC:+fsync = \"$FSYNC\"}
${THREADS:+threads = $THREADS}
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "bench-api-key"
max_connections = 100000
publish_per_sec = 1000000
publish_per_conn_sec = 1000
[tenants.demo.namespaces.room]
durable = false
tick_ms = 20
[tenants.demo.namespaces.world]
durable = false
tick_ms = 20
presence = true
T
}
