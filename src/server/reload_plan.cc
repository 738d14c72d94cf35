#include "server/reload_plan.h"

namespace parley::server {
namespace {

// What applies only at a start (a key, or a whole section): a changed one keeps
// its running value and is listed by its path.
template <typename T>
void keep(std::string path, const T& running, T& next, std::vector<std::string>& restart) {
  if (running == next) return;
  restart.push_back(std::move(path));
  next = running;
}
template <typename T>
void start_key(const char* section, const char* name, const T& running, T& next,
               std::vector<std::string>& restart) {
  keep(std::string(section) + "." + name, running, next, restart);
}
template <typename T>
void server_key(const char* name, const T& running, T& next, std::vector<std::string>& restart) {
  start_key("server", name, running, next, restart);
}

// A namespace's upstream target is fixed at start (upstream::Forwarder builds
// one per namespace that has one): its URL and queue bound stay as running.
void keep_upstream(const std::string& path, const NamespaceConfig* running, NamespaceConfig& next,
                   std::vector<std::string>& restart) {
  const std::string upstream = running ? running->upstream : std::string();
  const uint32_t queue = running ? running->upstream_queue : NamespaceConfig{}.upstream_queue;
  if (next.upstream != upstream) {
    restart.push_back(path + ".upstream");
    next.upstream = upstream;
  }
  if (!next.upstream.empty() && next.upstream_queue != queue) {
    restart.push_back(path + ".upstream_queue");
    next.upstream_queue = queue;
  }
  if (next.upstream.empty()) next.upstream_queue = queue;
}

}  // namespace

ReloadPlan plan_reload(const ServerConfig& running, ServerConfig file) {
  ReloadPlan plan;
  auto& r = plan.restart_required;
  ServerConfig& n = file;
  // Listeners, the store and everything sized at start. log_level is live.
  server_key("listen", running.listen, n.listen, r);
  server_key("tcp_listen", running.tcp_listen, n.tcp_listen, r);
  server_key("unix_listen", running.unix_listen, n.unix_listen, r);
  server_key("store", running.store, n.store, r);
  server_key("data_dir", running.data_dir, n.data_dir, r);
  server_key("fsync", running.fsync, n.fsync, r);
  server_key("topic_log", running.topic_log, n.topic_log, r);
  server_key("accept_data_loss", running.accept_data_loss, n.accept_data_loss, r);
  server_key("threads", running.threads, n.threads, r);
  server_key("heartbeat_ms", running.heartbeat_ms, n.heartbeat_ms, r);
  server_key("hello_timeout_ms", running.hello_timeout_ms, n.hello_timeout_ms, r);
  server_key("loop_slice_us", running.loop_slice_us, n.loop_slice_us, r);
  server_key("append_queue_limit", running.append_queue_limit, n.append_queue_limit, r);
  server_key("max_connections", running.max_connections, n.max_connections, r);
  server_key("preauth_frame_bytes", running.preauth_frame_bytes, n.preauth_frame_bytes, r);
  server_key("preauth_memory_bytes", running.preauth_memory_bytes, n.preauth_memory_bytes, r);
  server_key("store_verify_bytes", running.store_verify_bytes, n.store_verify_bytes, r);
  server_key("preauth_max_connections", running.preauth_max_connections, n.preauth_max_connections, r);
  server_key("preauth_max_per_address", running.preauth_max_per_address, n.preauth_max_per_address, r);
  server_key("http_idle_timeout_ms", running.http_idle_timeout_ms, n.http_idle_timeout_ms, r);
  server_key("tls_cert", running.tls_cert, n.tls_cert, r);
  server_key("tls_key", running.tls_key, n.tls_key, r);
  server_key("tcp_tls", running.tcp_tls, n.tcp_tls, r);
  server_key("listen_tls", running.listen_tls, n.listen_tls, r);
  server_key("ephemeral_memory_bytes", running.ephemeral_memory_bytes, n.ephemeral_memory_bytes, r);
  server_key("channel_idle_s", running.channel_idle_s, n.channel_idle_s, r);
  server_key("admin_key", running.admin_key, n.admin_key, r);
  server_key("log_format", running.log_format, n.log_format, r);

  // [valkey] and [postgres]: the store's links are made at start. Every key is
  // named (tests/docs/docs_test.py fails when a key config.cc reads is not).
  const ValkeyConfig& rv = running.valkey;
  ValkeyConfig& nv = n.valkey;
  start_key("valkey", "nodes", rv.nodes, nv.nodes, r);
  start_key("valkey", "cluster", rv.cluster, nv.cluster, r);
  start_key("valkey", "partitions", rv.partitions, nv.partitions, r);
  start_key("valkey", "pool_size", rv.pool_size, nv.pool_size, r);
  start_key("valkey", "command_timeout_ms", rv.command_timeout_ms, nv.command_timeout_ms, r);
  start_key("valkey", "wal_max_len", rv.wal_max_len, nv.wal_max_len, r);
  start_key("valkey", "wal_hard_cap", rv.wal_hard_cap, nv.wal_hard_cap, r);
  start_key("valkey", "fanout_gap_ms", rv.fanout_gap_ms, nv.fanout_gap_ms, r);
  start_key("valkey", "fanout_max_held", rv.fanout_max_held, nv.fanout_max_held, r);
  start_key("valkey", "fanout_fill_page", rv.fanout_fill_page, nv.fanout_fill_page, r);
  start_key("valkey", "presence_ttl_ms", rv.presence_ttl_ms, nv.presence_ttl_ms, r);
  start_key("valkey", "topology_refresh_ms", rv.topology_refresh_ms, nv.topology_refresh_ms, r);
  start_key("valkey", "wait_replicas", rv.wait_replicas, nv.wait_replicas, r);
  start_key("valkey", "wait_timeout_ms", rv.wait_timeout_ms, nv.wait_timeout_ms, r);
  const PostgresConfig& rp = running.postgres;
  PostgresConfig& np = n.postgres;
  start_key("postgres", "url", rp.url, np.url, r);
  start_key("postgres", "readers", rp.readers, np.readers, r);
  start_key("postgres", "timeout_ms", rp.timeout_ms, np.timeout_ms, r);
  const DynamoConfig& rd = running.dynamodb;
  DynamoConfig& nd = n.dynamodb;
  start_key("dynamodb", "table", rd.table, nd.table, r);
  start_key("dynamodb", "region", rd.region, nd.region, r);
  start_key("dynamodb", "endpoint", rd.endpoint, nd.endpoint, r);
  start_key("dynamodb", "access_key_id", rd.access_key_id, nd.access_key_id, r);
  start_key("dynamodb", "secret_access_key", rd.secret_access_key, nd.secret_access_key, r);
  start_key("dynamodb", "session_token", rd.session_token, nd.session_token, r);
  start_key("dynamodb", "ca_file", rd.ca_file, nd.ca_file, r);
  start_key("dynamodb", "timeout_ms", rd.timeout_ms, nd.timeout_ms, r);
  start_key("dynamodb", "spread", rd.spread, nd.spread, r);
  start_key("dynamodb", "create_table", rd.create_table, nd.create_table, r);
  start_key("dynamodb", "readers", rd.readers, nd.readers, r);
  // [persist] is read by `parley persist`, which does not reload: a change
  // applies when the persister restarts.
  const PersistConfig& rs = running.persist;
  PersistConfig& ns = n.persist;
  start_key("persist", "listen", rs.listen, ns.listen, r);
  start_key("persist", "group", rs.group, ns.group, r);
  start_key("persist", "consumer", rs.consumer, ns.consumer, r);
  start_key("persist", "batch", rs.batch, ns.batch, r);
  start_key("persist", "threads", rs.threads, ns.threads, r);
  start_key("persist", "poll_ms", rs.poll_ms, ns.poll_ms, r);
  start_key("persist", "claim_idle_ms", rs.claim_idle_ms, ns.claim_idle_ms, r);
  start_key("persist", "trim_interval_ms", rs.trim_interval_ms, ns.trim_interval_ms, r);
  // A field added to a section and to none of the lists above still keeps its
  // running value, and the section is named.
  keep("valkey", rv, nv, r);
  keep("postgres", rp, np, r);
  keep("dynamodb", rd, nd, r);
  keep("persist", rs, ns, r);

  for (auto& [id, t] : n.tenants) {
    auto was = running.tenants.find(id);
    const TenantConfig* old = was == running.tenants.end() ? nullptr : &was->second;
    const std::string path = "tenants." + id + ".namespaces.";
    for (auto& [name, ns] : t.namespaces) {
      const NamespaceConfig* before = nullptr;
      if (old) {
        auto it = old->namespaces.find(name);
        if (it != old->namespaces.end()) before = &it->second;
      }
      keep_upstream(path + name, before, ns, r);
    }
    keep_upstream(path + "default", old ? &old->default_namespace : nullptr, t.default_namespace, r);
    // A topic's partitions map keys to logs: a loaded topic keeps its count.
    for (auto& [name, topic] : t.topics) {
      const TopicConfig* before = old ? old->topic(name) : nullptr;
      if (before && before->partitions != topic.partitions) {
        r.push_back("tenants." + id + ".topics." + name + ".partitions");
        topic.partitions = before->partitions;
      }
    }
  }
  plan.next = std::move(n);
  return plan;
}

}  // namespace parley::server
