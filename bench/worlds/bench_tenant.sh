# Sourced by the world scripts: the tenant every parley-bench world run uses (the
# bench's default secret, no publish limits), as TOML on stdout.
bench_tenant_toml() {
  cat <<EOT
[tenants.demo]
secret = "demo-secret-change-me-0123456789"
api_key = "demo-api-key"
max_connections = 50000
publish_per_sec = 0
publish_per_conn_sec = 0
EOT
}
